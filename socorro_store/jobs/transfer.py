"""Export and import: a msgpack stream of the crashes of a time range, between any two stores.

The stream is a sequence of msgpack maps (``use_bin_type``: text is str, blobs are bin)::

    {"kind": "header", "format": 1, "start": ISO, "end": ISO, "crashes": N, "dumps": bool}
    {"kind": "crash", "crash_id": str, "raw_crash": JSON text, "dumps": {name: bytes},
     "processed": JSON text or None, "priority": T or None}                 (N times)
    {"kind": "trailer", "crashes": n, "processed": n, "dumps": n, "dump_bytes": n,
     "sha256": hex of the concatenated packed crash records}

The raw and processed documents travel as the JSON text stored in the crash row, so a crash
imports byte for byte as it was.  Export reads crash rows one at a time, in submission order
(the submitted_time index, paged): memory holds one crash whatever the range.

Import (:func:`import_crashes`) saves each crash through the crash store's own write path, so its
pointers, queue rows and live counters are written as a collector and a processor would have
written them: a processed crash arrives processed, an unprocessed one queued, a pending
reprocessing request pending.  A crash already stored is skipped, so importing twice changes
nothing.  Then, when anything was imported, the ``rollup`` job recomputes the closed intervals
of the imported days (from the first to the last, with their months and years): the counters are exact, as rollup makes them.  A truncated or corrupt
stream raises :class:`~socorro_store.errors.StreamCorrupt` with the byte offset of the first
record it could not use; every crash before it is imported (each save is complete on its own).
"""

import hashlib
import json
from datetime import timedelta

import msgpack

from ..crashstore import crashes
from ..crashstore.inspect import crash_exists
from ..errors import InvalidArgument, StreamCorrupt
from ..schema import keys as K
from . import rollup, runs

FORMAT = 1
_READ_CHUNK = 1 << 20
_MAX_RECORD = 1 << 30


def _pack(record):
    return msgpack.packb(record, use_bin_type=True)


def export_crashes(backend, start, end, out, dumps=True, progress=None):
    """Write the crashes submitted in ``[start, end)`` to the binary file ``out``; return the
    trailer (counts and checksum).  ``progress(done, total)`` is called after each crash."""
    start, end = K.parse_timestamp(start, "start"), K.parse_timestamp(end, "end")
    if end <= start:
        raise InvalidArgument(f"empty range: {start.isoformat()} is not before {end.isoformat()}")
    total = sum(1 for _ in crashes.crashes_submitted(backend, start, end))
    out.write(_pack({"kind": "header", "format": FORMAT, "start": start.isoformat(), "end": end.isoformat(),
                     "crashes": total, "dumps": bool(dumps)}))
    digest = hashlib.sha256()
    counts = {"crashes": 0, "processed": 0, "dumps": 0, "dump_bytes": 0}
    columns = [b"flags", K.COL_META, K.COL_PROCESSED_JSON] + ([K.FAMILY_RAW] if dumps else [])
    for crash_id in crashes.crashes_submitted(backend, start, end):
        cells = backend.get_row(K.CRASH_REPORTS, K.crash_row_key(crash_id), columns=columns)
        if K.COL_META not in cells:
            continue  # deleted since the index was read
        blobs = {K.dump_name_from_column(c): v for c, v in cells.items() if c.startswith(K.FAMILY_RAW + b":")}
        processed = cells.get(K.COL_PROCESSED_JSON) if cells.get(K.COL_PROCESSED) == b"Y" else None
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


def _records(stream):
    """Yield ``(offset, record)`` of each msgpack object in ``stream``, then ``(size, None)`` at
    its end; StreamCorrupt for bytes that are not msgpack or a stream ending inside a record."""
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=_MAX_RECORD, strict_map_key=False)
    offset = fed = 0
    while True:
        chunk = stream.read(_READ_CHUNK)
        fed += len(chunk)
        if chunk:
            unpacker.feed(chunk)
        while True:
            try:
                record = unpacker.unpack()
            except msgpack.OutOfData:
                break
            except (ValueError, msgpack.UnpackException, TypeError) as exc:
                raise StreamCorrupt(offset, f"not msgpack ({type(exc).__name__}: {exc})") from None
            yield offset, record
            offset = unpacker.tell()
        if not chunk:
            if offset != fed:
                raise StreamCorrupt(offset, f"the stream ends inside a record ({fed - offset} bytes left: truncated)")
            yield fed, None
            return


def _crash_fields(offset, record):
    try:
        crash_id, raw_text, blobs = record["crash_id"], record["raw_crash"], record["dumps"]
        processed_text, priority = record.get("processed"), record.get("priority")
        if not (isinstance(crash_id, str) and isinstance(raw_text, str) and isinstance(blobs, dict)
                and isinstance(processed_text, (str, type(None))) and isinstance(priority, (str, type(None)))):
            raise TypeError("a field has the wrong type")
        raw = json.loads(raw_text)
        processed = json.loads(processed_text) if processed_text is not None else None
        prepared = crashes.prepare_raw(raw, blobs, crash_id)
        done = crashes.prepare_processed(processed) if processed is not None else None
        requested = K.parse_key_timestamp(priority.encode("ascii")) if priority else None
    except (KeyError, TypeError, ValueError, InvalidArgument) as exc:
        raise StreamCorrupt(offset, f"bad crash record: {exc}") from None
    return crash_id, prepared, done, requested


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
        crash_id, prepared, processed, requested = _crash_fields(offset, record)
        report["crashes"] += 1
        if crash_exists(backend, crash_id):
            report["skipped"] += 1
        else:
            _save(store, prepared, processed, requested)
            report["imported"] += 1
            report["processed" if processed is not None else "queued"] += 1
            day = prepared.submitted.date()
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


def _save(store, prepared, processed, requested):
    """One crash through the store's write path: raw (queued), then processed, then a pending
    priority request."""
    crashes.write_raw(store.backend, [prepared], store.live_counters)
    if processed is not None:
        crashes.write_processed(store.backend, [processed], store.live_counters)
    if requested is not None:
        crashes.enqueue_priority(store.backend, [prepared.crash_id], requested, store.live_counters)
