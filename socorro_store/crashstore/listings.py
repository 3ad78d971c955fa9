"""Listing crashes: by submission time and by signature, over every key layout a store may hold.

A store being migrated from Socorro holds pointers in its layouts beside ours
(:mod:`socorro_store.schema.stored`), and Socorro's code may still be writing them.  Both listings
read them live, with ours, and return each crash once, in submission order ``(time, crash id)``.

By time (:func:`crashes_submitted`)
    16 salted range scans of ``crash_reports_index_submitted_time``, as before.  Socorro's
    19-character keys (microsecond 0) sort after the 26-character keys of their second, so each
    bucket's rows are re-ordered within each second (a second of one bucket is a handful of rows)
    before the buckets are merged, and every scan stops at the next whole second after ``end``
    (:func:`~socorro_store.schema.stored.window_scan_end`): ``[t, t + 1 µs)`` finds a crash
    Socorro keyed ``t``.  A crash with both key forms (``verify-indexes --repair`` wrote ours
    beside Socorro's) is listed once.

By signature (:func:`crashes_by_signature`)
    Our index (``esc(signature) 00 T ID``) is one range scan in time order.  Socorro's is
    ``signature + crash_id``: its rows of one signature are contiguous but in crash-id order,
    with no time in the key.  They are read with one more scan, ``[signature + "0", signature +
    "g")`` (a crash id starts with a hex digit; our rows of the signature, behind ``00``, are not
    in it), their crash rows give their submission times (one multi-row get per page), and they
    are sorted and merged with ours.  Cost: on a store without Socorro's rows, exactly one extra
    scan, which finds nothing; with them, that scan plus one get per page of them.  Memory: the
    ``(time, id)`` of Socorro's rows of the signature inside the window (a crash id's date bounds
    which crash rows are read).  Rows of longer signatures that the scan meets (``"js::Foo0…"``)
    are dropped by their length and form, and every pointer, ours or Socorro's, is checked
    against its crash row's current signature.
"""

import base64
import binascii
import heapq
import itertools
import json
import logging
from datetime import timedelta

from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema.crash_facts import (
    COL_BUILD,
    COL_OS_NAME,
    COL_P_PRODUCT,
    COL_P_VERSION,
    COL_PRODUCT,
    COL_VERSION,
    LISTING_COLUMNS,
)
from ..schema.stored import (
    parse_socorro_signature_key,
    parse_stored_time_index_key,
    second_of_key,
    stored_time,
    window_scan_end,
)
from .queue import readable_rows, with_crash_rows

_log = logging.getLogger("socorro_store")
_SOCORRO_SIGNATURE_COLUMNS = [K.COL_OOID, K.COL_SIGNATURE, K.COL_SUBMITTED]


def _by_second(rows, table):
    """``(time, crash id)`` of one bucket's scanned rows in time order: the rows of each second
    (both key forms) sorted by their parsed time; unreadable keys skipped (verify-indexes
    reports them)."""
    readable = readable_rows(rows, parse_stored_time_index_key, table)
    for _second, group in itertools.groupby(readable, key=lambda item: second_of_key(item[0])):
        yield from sorted((moment, crash_id) for _row, _cells, (crash_id, moment) in group)


def _once(items):
    """Drop an item equal to the one before it (the same crash met under two key forms)."""
    last = None
    for item in items:
        if item != last:
            yield item
        last = item


def time_window(backend, table, start, end, page_size=1000):
    """``(time, crash id)`` of every pointer of a salted time index in ``[start, end)``, every key
    form, in submission order, each once."""
    stop = window_scan_end(end)
    streams = []
    for salt_char in K.SALTS:
        low, high = K.time_index_range(salt_char, start, stop)
        rows = backend.scan(table, start=low, stop=high, columns=[K.COL_OOID], page_size=page_size)
        streams.append(_by_second(rows, table))
    return _once(item for item in heapq.merge(*streams) if start <= item[0] < end)


def crashes_submitted(backend, start, end, page_size=1000):
    """Crash ids submitted in ``[start, end)``, in submission order (16 salts merged).

    Pointers whose crash row does not exist (a save in progress or failed) are skipped.
    """
    start, end = K.parse_timestamp(start, "start"), K.parse_timestamp(end, "end")
    pointers = time_window(backend, K.SUBMITTED_TIME, start, end, page_size)
    return with_crash_rows(backend, (crash_id for _moment, crash_id in pointers), lambda crash_id: crash_id,
                           page_size)


def crashes_by_signature(backend, signature, start=None, end=None, page_size=1000, settle=None):
    """Crash ids of ``signature`` (``None`` = ##null##, "" = ##empty##) submitted in ``[start, end)``,
    from our signature index and Socorro's, in submission order, each once.

    A pointer whose crash now has another signature (left by a failed or superseded save, or a
    reprocessing) is skipped; so is one whose crash row lacks ``ids:ooid`` (what a save racing a
    deletion may leave on HBase).  ``settle()``, if given, is called once the arguments are
    valid: a cut-over store's signature pointers are derived (:mod:`.counter_deriver`), so a
    store reading its own saves settles them first.
    """
    start = K.parse_timestamp(start, "start") if start is not None else None
    end = K.parse_timestamp(end, "end") if end is not None else None
    stored = K.signature_name(signature).encode("utf-8", "surrogatepass")
    K.signature_row(signature)  # length check
    if settle is not None:
        settle()
    ours = _our_signature_pointers(backend, signature, stored, start, end, page_size)
    theirs = _socorro_signature_pointers(backend, stored, start, end, page_size)
    return (crash_id for _moment, crash_id in _once(heapq.merge(ours, theirs)))


def _current(stored):
    return lambda cells: cells.get(K.COL_SIGNATURE) == stored and K.COL_OOID in cells


def _our_signature_pointers(backend, signature, stored, start, end, page_size):
    """``(time, crash id)`` of our index's pointers in the window whose crash still has the
    signature: one range scan, in time order."""
    low, high = K.signature_index_range(signature, start, end)
    rows = backend.scan(K.SIGNATURE_OOID, start=low, stop=high, columns=[K.COL_OOID], page_size=page_size)
    pointers = ((moment, crash_id) for _row, _cells, (_name, moment, crash_id)
                in readable_rows(rows, K.parse_signature_index_key, K.SIGNATURE_OOID))
    return with_crash_rows(backend, pointers, lambda item: item[1], page_size, columns=(K.COL_OOID, K.COL_SIGNATURE),
                           accept=_current(stored))


def _socorro_signature_pointers(backend, stored, start, end, page_size):
    """``(time, crash id)`` of Socorro's ``signature + crash_id`` pointers in the window whose crash
    still has the signature, sorted (see the module docstring for the cost)."""
    rows = backend.scan(K.SIGNATURE_OOID, start=stored + b"0", stop=stored + b"g", columns=[K.COL_OOID],
                        page_size=page_size)
    first_day = start.date() - timedelta(days=1) if start is not None else None
    last_day = end.date() + timedelta(days=1) if end is not None else None
    ids = (crash_id for crash_id in _socorro_ids(rows, stored)
           if (first_day is None or K.crash_date(crash_id) >= first_day)
           and (last_day is None or K.crash_date(crash_id) <= last_day))  # a crash id's date is its day
    found = []
    while True:
        page = list(itertools.islice(ids, page_size))
        if not page:
            break
        cells_of = backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(c) for c in page],
                                    columns=_SOCORRO_SIGNATURE_COLUMNS)
        for crash_id in page:
            cells = cells_of.get(K.crash_row_key(crash_id), {})
            if not _current(stored)(cells) or K.COL_SUBMITTED not in cells:
                continue
            try:
                moment = stored_time(cells[K.COL_SUBMITTED])
            except InvalidArgument as exc:
                _log.warning("skipped crash %s of a Socorro signature row: unreadable crash row (%s)", crash_id, exc)
                continue
            if (start is None or start <= moment) and (end is None or moment < end):
                found.append((moment, crash_id))
    return iter(sorted(found))


def _socorro_ids(rows, stored):
    """Crash ids of the rows that are exactly ``stored + crash id`` (Socorro's layout)."""
    for row, _cells in rows:
        if len(row) != len(stored) + K.CRASH_ID_LEN:
            continue  # a longer signature's row, Socorro's or ours
        try:
            _name, crash_id = parse_socorro_signature_key(row)
        except InvalidArgument:
            continue
        if row[:len(stored)] == stored:
            yield crash_id


def latest_crashes_by_signature(backend, signature, limit=50, offset=0, settle=None):
    """``([(submitted time, crash id)], more)``: the ``limit`` newest crashes of ``signature`` after
    skipping the ``offset`` newest, newest first, and whether older ones remain.

    One reverse range scan of our signature index, read lazily (pages of ``offset + limit + 1``
    pointers), each pointer checked against its crash row's current signature as in
    :func:`crashes_by_signature`: it reads at most the pointers it returns or skips, plus one,
    and stale ones.  Socorro's ``signature + crash_id`` rows carry no time, so only
    :func:`crashes_by_signature` lists them (``settle`` too).
    """
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "limit" else 0):
            raise InvalidArgument(f"{name} must be an int >= {1 if name == 'limit' else 0}: {value!r}")
    stored = K.signature_name(signature).encode("utf-8", "surrogatepass")
    low, high = K.signature_index_range(signature)
    if settle is not None:
        settle()
    wanted = offset + limit + 1
    rows = backend.scan(K.SIGNATURE_OOID, start=high, stop=low, reverse=True, columns=[K.COL_OOID],
                        page_size=min(wanted, 1000))
    pointers = ((moment, crash_id) for row, _cells, (_name, moment, crash_id)
                in readable_rows(rows, K.parse_signature_index_key, K.SIGNATURE_OOID)
                if row.startswith(low))  # the reverse scan's inclusive top is not one of them
    found = list(itertools.islice(
        with_crash_rows(backend, pointers, lambda item: item[1], min(wanted, 1000),
                        columns=(K.COL_OOID, K.COL_SIGNATURE), accept=_current(stored)), wanted))
    return found[offset:offset + limit], len(found) == wanted


# -- one page of a signature's crashes, by cursor -----------------------------------------------

_CURSOR_LEN = K.TIMESTAMP_LEN + K.CRASH_ID_LEN
_PAGE_COLUMNS = (K.COL_OOID, K.COL_SIGNATURE, COL_PRODUCT, COL_VERSION, COL_P_PRODUCT, COL_P_VERSION, COL_OS_NAME,
                 K.COL_PROCESS_TYPE)


def page_cursor(moment, crash_id):
    """The opaque cursor of a signature-index position: the key's tail (time and crash id),
    URL-safe base64 without padding.  Only :func:`parse_page_cursor` reads it."""
    tail = K.format_timestamp(moment) + K.validate_crash_id(crash_id).encode("ascii")
    return base64.urlsafe_b64encode(tail).decode("ascii").rstrip("=")


def parse_page_cursor(text):
    """``(time, crash id)`` of a cursor of :func:`page_cursor`; anything else (another length,
    not base64, not a time and a crash id) is InvalidArgument."""
    if not isinstance(text, str) or not text or len(text) > 128:
        raise InvalidArgument("not a page cursor: follow the page's own newer/older links")
    try:
        tail = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidArgument("not a page cursor: follow the page's own newer/older links") from None
    if len(tail) != _CURSOR_LEN:
        raise InvalidArgument("not a page cursor: follow the page's own newer/older links")
    try:
        moment = K.parse_key_timestamp(tail[:K.TIMESTAMP_LEN])
        crash_id = K.validate_crash_id(tail[K.TIMESTAMP_LEN:].decode("ascii"))
    except (InvalidArgument, UnicodeDecodeError):
        raise InvalidArgument("not a page cursor: follow the page's own newer/older links") from None
    return moment, crash_id


def _text(cells, column):
    value = cells.get(column)
    return value.decode("utf-8", "replace") if value else None


def _listed(moment, crash_id, cells):
    """One listed crash: its time and id, and what the page lists of it (None where unknown):
    from the small ``flags`` cells, or the processed JSON of a row older than them."""
    processed = {}
    if COL_BUILD in cells:
        processed = {name: cells[column].decode("utf-8", "replace") for name, column in LISTING_COLUMNS.items()
                     if cells.get(column)}
    elif K.COL_PROCESSED_JSON in cells:
        try:
            processed = json.loads(cells[K.COL_PROCESSED_JSON])
        except (ValueError, RecursionError):
            processed = {}
        processed = processed if isinstance(processed, dict) else {}

    def field(name):
        value = processed.get(name)
        return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None

    return {"submitted": moment, "crash_id": crash_id,
            "product": _text(cells, COL_P_PRODUCT) or _text(cells, COL_PRODUCT),
            "version": _text(cells, COL_P_VERSION) or _text(cells, COL_VERSION),
            "os": _text(cells, COL_OS_NAME), "process_type": _text(cells, K.COL_PROCESS_TYPE),
            "reason": field("reason"), "address": field("address"), "build": field("build")}


def _below(key):
    """The start of a reverse scan of the rows strictly below ``key`` (a reverse scan's start is
    inclusive): ``key`` with its last byte lowered.  Every index row of one signature has the
    same length (escaped name, 0x00, time, crash id), so no row of it lies between the two; the
    last byte is a crash id's digit, never 0x00."""
    return key[:-1] + bytes([key[-1] - 1])


def signature_page(backend, signature, limit=50, before=None, after=None, details=True):
    """One page of ``signature``'s crashes, newest first, by cursor (never by offset).

    ``before`` / ``after``: a ``(time, crash id)`` position (:func:`parse_page_cursor`); the page
    holds the ``limit`` crashes just older than ``before``, or just newer than ``after``, or
    (neither) the newest.  Returns ``{"crashes": [{"submitted", "crash_id", "product",
    "version", "os", "process_type", "reason", "address", "build"}], "older": (time, id) or
    None, "newer": (time, id) or None}``: the positions to ask for the next page each way
    (None: no crash that way, as far as this read saw).

    Cost, the same for any page: one range scan of our signature index from the cursor (pages of
    ``limit + 1`` rows) and one multi-row get of those crash rows (their flags cells and, with
    ``details``, the processed crash for reason, address and build), each pointer checked
    against its crash row's current signature as :func:`crashes_by_signature` does; stale
    pointers cost more rows.  Socorro's ``signature + crash_id`` rows carry no time, so only
    :func:`crashes_by_signature` lists them.
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidArgument(f"limit must be an int in 1..1000: {limit!r}")
    if before is not None and after is not None:
        raise InvalidArgument("give before or after, not both")
    stored = K.signature_name(signature).encode("utf-8", "surrogatepass")
    low, high = K.signature_index_range(signature)
    cursor = before or after
    at = K.signature_index_key(signature, *cursor) if cursor is not None else None
    if after is None:
        rows = backend.scan(K.SIGNATURE_OOID, start=_below(at) if at else high, stop=low, reverse=True,
                            columns=[K.COL_OOID], page_size=limit + 1)
    else:
        rows = backend.scan(K.SIGNATURE_OOID, start=at + b"\x00", stop=high, columns=[K.COL_OOID], page_size=limit + 1)
    pointers = ((moment, crash_id) for row, _cells, (_name, moment, crash_id)
                in readable_rows(rows, K.parse_signature_index_key, K.SIGNATURE_OOID)
                if row.startswith(low) and row != at)  # the cursor's own row, the reverse scan's top
    columns = list(_PAGE_COLUMNS) + (list(LISTING_COLUMNS.values()) if details else [])
    accept = _current(stored)
    found = []
    while len(found) <= limit:
        batch = list(itertools.islice(pointers, limit + 1 - len(found)))
        if not batch:
            break
        cells_of = backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(c) for _m, c in batch], columns=columns)
        if details:  # rows processed before the listing cells existed: their JSON, for them only
            older = [row for row, cells in cells_of.items() if COL_BUILD not in cells and K.COL_SIGNATURE in cells]
            for row, cells in (backend.get_rows(K.CRASH_REPORTS, older, columns=[K.COL_PROCESSED_JSON]).items()
                               if older else ()):
                cells_of[row].update(cells)
        for moment, crash_id in batch:
            cells = cells_of.get(K.crash_row_key(crash_id))
            if cells is not None and accept(cells):
                found.append(_listed(moment, crash_id, cells))
    more = len(found) > limit
    found = found[:limit]
    if after is not None:
        found.reverse()
    first = (found[0]["submitted"], found[0]["crash_id"]) if found else None
    last = (found[-1]["submitted"], found[-1]["crash_id"]) if found else None
    if after is None:
        older, newer = (last if more else None), (first if before is not None else None)
    else:
        older, newer = (last or after), (first if more else None)
    return {"crashes": found, "older": older, "newer": newer}
