"""Export and import: a msgpack stream of the crashes of a time range, between any two stores.

The stream is a sequence of msgpack maps (``use_bin_type``: text is str, blobs are bin)::

    {"kind": "header", "format": 1, "start": ISO, "end": ISO, "crashes": N, "dumps": bool}
    {"kind": "crash", "crash_id": str, "raw_crash": JSON text, "dumps": {name: bytes},
     "processed": JSON text or None, "priority": T or None}                 (N times)
    {"kind": "trailer", "crashes": n, "processed": n, "dumps": n, "dump_bytes": n,
     "sha256": hex of the concatenated packed crash records}

The raw and processed documents travel as the JSON text stored in the crash row, so a crash
imports byte for byte as it was.  Export reads crash rows one at a time, in submission order
(the submitted_time index, paged): memory holds one crash whatever the range.  Then come the
crash rows of the range that no ``submitted_time`` pointer names (Socorro's happybase storage
wrote none), found by crash-id day as ``verify-indexes`` and ``rollup`` find them: a range
exports what the whole store holds in it, pointer or not.  A crash is exported processed when
its row says so in any writer's form (:func:`~socorro_store.schema.stored.stored_processed`).

Import (:func:`import_crashes`) saves each crash through the crash store's own write path, so its
pointers, queue rows and live counters are written as a collector and a processor would have
written them: a processed crash arrives processed, an unprocessed one queued, a pending
reprocessing request pending.  A crash already stored is skipped (never overwritten), so
importing twice changes nothing.  A record is refused (:class:`~socorro_store.errors.RecordRefused`,
nothing of it written) when a document in it names another crash than the record's ``crash_id``
or fails the store's validation: an import writes only the record's own crash.  Then, when anything was imported, the ``rollup`` job recomputes the closed intervals
of the imported days (from the first to the last, with their months and years): the counters are exact, as rollup makes them.  A truncated or corrupt
stream raises :class:`~socorro_store.errors.StreamCorrupt` with the byte offset of the first
record it could not use; every crash before it is imported (each save is complete on its own).
"""

import hashlib
import json
from datetime import timedelta

import msgpack

from ..crashstore import crashes
from ..errors import CrashConflict, InvalidArgument, RecordRefused, StreamCorrupt
from ..schema import keys as K
from ..schema.stored import stored_processed, stored_time, time_index_key_forms
from . import data_days, rollup, runs

FORMAT = 1
_READ_CHUNK = 1 << 20
_MAX_RECORD = 1 << 30
#: A record is a map of a few fields, one of them the map of its dumps: these bound any record
_MAX_MAP_LEN = 256
_MAX_MAPS_PER_RECORD = 16


def _pack(record):
    return msgpack.packb(record, use_bin_type=True)


def export_crashes(backend, start, end, out, dumps=True, progress=None):
    """Write the crashes submitted in ``[start, end)`` to the binary file ``out``; return the
    trailer (counts and checksum).  ``progress(done, total)`` is called after each crash."""
    start, end = K.parse_timestamp(start, "start"), K.parse_timestamp(end, "end")
    if end <= start:
        raise InvalidArgument(f"empty range: {start.isoformat()} is not before {end.isoformat()}")
    total = sum(1 for _ in _exported(backend, start, end))
    out.write(_pack({"kind": "header", "format": FORMAT, "start": start.isoformat(), "end": end.isoformat(),
                     "crashes": total, "dumps": bool(dumps)}))
    digest = hashlib.sha256()
    counts = {"crashes": 0, "processed": 0, "dumps": 0, "dump_bytes": 0}
    columns = [b"flags", K.COL_META, K.COL_PROCESSED_JSON, K.COL_SIGNATURE] + ([K.FAMILY_RAW] if dumps else [])
    for crash_id in _exported(backend, start, end):
        cells = backend.get_row(K.CRASH_REPORTS, K.crash_row_key(crash_id), columns=columns)
        if K.COL_META not in cells:
            continue  # deleted since the index was read
        blobs = {K.dump_name_from_column(c): v for c, v in cells.items() if c.startswith(K.FAMILY_RAW + b":")}
        processed = cells.get(K.COL_PROCESSED_JSON) if stored_processed(cells) else None
        priority = cells.get(K.COL_PRIORITY)
        packed = _pack({"kind": "crash", "crash_id": crash_id, "raw_crash": cells[K.COL_META].decode("utf-8"),
                        "dumps": blobs, "processed": processed.decode("utf-8") if processed else None,
                        "priority": priority.decode("ascii") if priority else None})
        out.write(packed)
        digest.update(packed)
        counts["crashes"] += 1
        counts["processed"] += processed is not None
        counts["dumps"] += len(blobs)
        counts["dump_bytes"] += sum(len(b) for b in blobs.values())
        if progress:
            progress(counts["crashes"], total)
    trailer = {"kind": "trailer", **counts, "sha256": digest.hexdigest()}
    out.write(_pack(trailer))
    out.flush()
    return trailer


def _exported(backend, start, end, page_size=500):
    """Crash ids of the crashes submitted in ``[start, end)``: those the ``submitted_time`` index
    names, in submission order, then those of crash rows no pointer names."""
    yield from crashes.crashes_submitted(backend, start, end)
    last = (end - timedelta(microseconds=1)).date() + timedelta(days=1)
    for day in data_days.days_with_data(backend, start.date(), last):
        yield from _unindexed(backend, day, start, end, page_size)


def _unindexed(backend, day, start, end, page_size):
    """Crash ids of the crash rows of crash-id ``day`` submitted in ``[start, end)`` whose
    ``submitted_time`` pointer (either key form) is absent, one get per page of rows."""
    for salt_char in K.SALTS:
        page = []
        rows = backend.scan(K.CRASH_REPORTS, prefix=K.crash_day_prefix(salt_char, day), columns=[K.COL_SUBMITTED],
                            page_size=page_size)
        for row, cells in rows:
            try:
                crash_id, submitted = K.crash_id_from_row_key(row), stored_time(cells[K.COL_SUBMITTED])
                if start <= submitted < end:
                    page.append((crash_id, time_index_key_forms(crash_id, submitted)))
            except (KeyError, InvalidArgument):
                continue  # no crash yet (a save in flight), or unreadable (verify-indexes reports it)
            if len(page) >= page_size:
                yield from _without_pointer(backend, page)
                page = []
        yield from _without_pointer(backend, page)


def _without_pointer(backend, page):
    """The crash ids of ``page`` (``[(crash id, its pointer's key forms)]``) with no pointer."""
    forms = {form: crash_id for crash_id, keys in page for form in keys}
    found = backend.get_rows(K.SUBMITTED_TIME, list(forms), columns=[K.COL_OOID]) if forms else {}
    pointed = {forms[form] for form, cells in found.items() if cells.get(K.COL_OOID) == forms[form].encode("ascii")}
    return [crash_id for crash_id, _keys in page if crash_id not in pointed]


class _Oversized(Exception):
    """A record decodes to more than any record of this format (see :class:`_ShapeBudget`)."""


class _ShapeBudget:
    """Bounds what one record may decode to, before it is built: this format's records are maps
    of strings, bytes and one map of dumps, with no arrays, so a few small maps.  Without it, an
    8 MB record of nested empty arrays decoded to ~600 MB of Python objects before any check."""

    def __init__(self):
        self.maps = 0

    def __call__(self, pairs):  # msgpack's object_pairs_hook: called as each map is completed
        self.maps += 1
        if self.maps > _MAX_MAPS_PER_RECORD:
            raise _Oversized(f"more than {_MAX_MAPS_PER_RECORD} maps in one record")
        return dict(pairs)


def _records(stream):
    """Yield ``(offset, record)`` of each msgpack object in ``stream``, then ``(size, None)`` at
    its end; StreamCorrupt for bytes that are not msgpack or a stream ending inside a record, or
    a record whose shape no record of this format has (arrays, many or large maps): its decoded
    size is bounded by :class:`_ShapeBudget` and the unpacker's limits, not by its bytes."""
    budget = _ShapeBudget()
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=_MAX_RECORD, strict_map_key=False,
                                max_array_len=0, max_map_len=_MAX_MAP_LEN, object_pairs_hook=budget)
    offset = fed = 0
    while True:
        chunk = stream.read(_READ_CHUNK)
        fed += len(chunk)
        if chunk:
            unpacker.feed(chunk)
        while True:
            budget.maps = 0
            try:
                record = unpacker.unpack()
            except msgpack.OutOfData:
                break
            except _Oversized as exc:
                raise RecordRefused(offset, None, f"no record of this format decodes to that: {exc}") from None
            except ValueError as exc:
                if "exceeds max_" in str(exc):  # the unpacker's own limits, set below
                    raise RecordRefused(offset, None, f"no record of this format decodes to that: {exc}") from None
                raise StreamCorrupt(offset, f"not msgpack ({type(exc).__name__}: {exc})") from None
            except (msgpack.UnpackException, TypeError) as exc:
                raise StreamCorrupt(offset, f"not msgpack ({type(exc).__name__}: {exc})") from None
            yield offset, record
            offset = unpacker.tell()
        if not chunk:
            if offset != fed:
                raise StreamCorrupt(offset, f"the stream ends inside a record ({fed - offset} bytes left: truncated)")
            yield fed, None
            return


#: Keys of the documents that name a crash: each must name the record's own crash when present.
_ID_KEYS = ("uuid", "crash_id", "ooid")


def _crash_fields(offset, record):
    """``(crash_id, raw crash, dumps, processed crash or None, priority request time or None)``
    of a crash record, every part validated before anything is written.

    StreamCorrupt for a record that is not a crash record; :class:`RecordRefused` for one that is
    readable but inconsistent (a document naming another crash) or fails the store's validation.
    """
    try:
        crash_id, raw_text, blobs = record["crash_id"], record["raw_crash"], record["dumps"]
        processed_text, priority = record.get("processed"), record.get("priority")
        if not (isinstance(crash_id, str) and isinstance(raw_text, str) and isinstance(blobs, dict)
                and isinstance(processed_text, (str, type(None))) and isinstance(priority, (str, type(None)))):
            raise TypeError("a field has the wrong type")
        raw = json.loads(raw_text)
        processed = json.loads(processed_text) if processed_text is not None else None
    except RecursionError:
        raise RecordRefused(offset, str(record.get("crash_id")), "a JSON document nests too deep") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise StreamCorrupt(offset, f"bad crash record: {exc}") from None
    try:
        K.validate_crash_id(crash_id)
        for what, document in (("raw crash", raw), ("processed crash", processed)):
            if document is None:
                continue
            if not isinstance(document, dict):
                raise InvalidArgument(f"the {what} is not a JSON object")
            # The processed crash is saved under its own ``uuid``: one naming another stored
            # crash would overwrite that crash.  Every id a document carries must be the record's.
            for key in _ID_KEYS:
                if key in document and document[key] != crash_id:
                    raise InvalidArgument(f"the {what}'s {key} {document[key]!r} is not the record's crash id")
        if processed is not None and "uuid" not in processed:
            raise InvalidArgument("the processed crash has no uuid")
        crashes.prepare_raw(raw, blobs, crash_id)  # validation only: the store saves it again
        if processed is not None:
            crashes.prepare_processed(processed)
        requested = K.parse_key_timestamp(priority.encode("ascii", "replace")) if priority else None
    except InvalidArgument as exc:
        raise RecordRefused(offset, crash_id, str(exc)) from None
    return crash_id, raw, blobs, processed, requested


def import_crashes(store, stream, progress=None, rollup_counters=True):
    """Import an export stream (a binary file) into ``store`` (a CrashStore); return a report.

    ``{"crashes": read, "imported": new, "skipped": already stored, "processed": n, "queued": n,
    "header": {...}, "trailer": {...}, "rollup": the rollup report, or why it did not run}``.
    """
    backend = store.backend
    report = {"crashes": 0, "imported": 0, "skipped": 0, "processed": 0, "queued": 0}
    header = trailer = None
    digest = hashlib.sha256()
    first_day = last_day = None
    for offset, record in _records(stream):
        if record is None:
            break
        kind = record.get("kind") if isinstance(record, dict) else None
        if header is None:
            if kind != "header" or record.get("format") != FORMAT:
                raise StreamCorrupt(offset, f"not a socorro-store export (format {FORMAT}) header")
            header = record
            continue
        if trailer is not None:
            raise StreamCorrupt(offset, "data after the trailer")
        if kind == "trailer":
            trailer = record
            if record.get("sha256") != digest.hexdigest() or record.get("crashes") != report["crashes"]:
                raise StreamCorrupt(offset, "the trailer's count or checksum does not match the crashes read")
            continue
        if kind != "crash":
            raise StreamCorrupt(offset, f"unknown record kind {kind!r}")
        digest.update(_pack(record))
        crash_id, raw, blobs, processed, requested = _crash_fields(offset, record)
        report["crashes"] += 1
        submitted = _save(store, offset, crash_id, raw, blobs, processed, requested)
        if submitted is None:
            report["skipped"] += 1
        else:
            report["imported"] += 1
            report["processed" if processed is not None else "queued"] += 1
            day = submitted.date()
            first_day = day if first_day is None or day < first_day else first_day
            last_day = day if last_day is None or day > last_day else last_day
        if progress:
            progress(report["crashes"], header.get("crashes") or report["crashes"])
    if header is None:
        raise StreamCorrupt(0, "empty stream: no header")
    if trailer is None:
        raise StreamCorrupt(offset, "the stream ends without its trailer (truncated)")
    store.flush_counters()
    report.update(header=header, trailer=trailer, rollup=None)
    if rollup_counters and first_day is not None:
        try:
            # only the imported days (and their months and years): not every day since
            until = (last_day + timedelta(days=1)).isoformat()
            report["rollup"] = rollup.run_rollup(backend, until=until, since=first_day.isoformat())
        except runs.JobLeaseHeld as exc:
            report["rollup"] = f"not run: {exc} (live counters were updated; run rollup later)"
    return report


def _save(store, offset, crash_id, raw, blobs, processed, requested):
    """One crash through the store's own write path (its validation and size checks, its
    retry-or-conflict check): raw (queued), then processed, then a pending priority request.

    Returns the crash's submitted time, or None when the crash was already stored (the same
    crash, or another under its id: never overwritten).  Only the record's own crash is written.
    """
    try:
        if not store.save_raw_crashes([(raw, blobs, crash_id)]):
            return None  # stored already (perhaps by a concurrent save): left as it is
    except CrashConflict:
        return None  # another crash is stored under this id: it stays
    except InvalidArgument as exc:  # the store's own limits (its cell size, its request size)
        raise RecordRefused(offset, crash_id, str(exc)) from None
    if processed is not None:
        store.save_processed_crashes([processed])
    if requested is not None:
        crashes.enqueue_priority(store.backend, [crash_id], requested, store.live_counters)
    return K.parse_timestamp(raw["submitted_timestamp"])
