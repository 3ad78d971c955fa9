"""Rows exactly as Socorro's own HBase code wrote them (``reference/anchors.md``), with plain puts
and increments: through happybase against the gateway, or the backend contract's mutate_rows.

Formats (socorro ``external/hb/crashstorage.py`` and ``external/happybase/crashstorage.py``):
``timestamps:submitted`` is the collector's isoformat with offset; time-index keys are
``salt + ts[:-6] + crash_id`` (19 characters of time when the microsecond is 0);
``flags:legacy_processing`` is ``Y`` (legacy 0) or absent; ``timestamps:processed`` has a space;
the signature index is ``signature + crash_id``; ``hang_id_submitted_time`` rows are
``hang_id[0] + ts[:-6] + hang_id`` holding ``ids:ooid:<ProcessType>`` (both Socorro versions'
``crash_id_to_timestamped_row_id(hang_id, ts)``); the queue counters live in the metrics row
``crash_report_queue``; the happybase storage wrote only the crash row, with ``flags:processed``
empty.

The 2016 processing cycle (:func:`socorro_2016_new_crashes`, :func:`socorro_2016_save_processed`)
does what ``hb/crashstorage.py`` did: ``new_crashes`` merges 16 salted prefix scans of the legacy
queue on the unsalted key and deletes each row as it yields it (decrementing its counter);
``save_processed`` reads the crash row's state, and when ``flags:processed`` is ``N`` decrements
``current_unprocessed_size`` and deletes the standard queue row (never the legacy one), then
writes the crash row and the ``signature + crash_id`` row.  The 2013 ``put_processed_json`` did the
same (:func:`socorro_process` is it with a fixed signature).
"""

import heapq
import json
from datetime import timedelta

import happybase

from socorro_store.backends import Increment, RowMutation
from socorro_store.config import parse_url


class BackendWriter:
    """Plain puts and increments through the backend contract."""

    def __init__(self, backend):
        self.backend = backend

    def put(self, table, row, cells):
        self.backend.mutate_rows(table, [RowMutation(row, cells)])

    def delete(self, table, row):
        self.backend.mutate_rows(table, [RowMutation(row, delete_row=True)])

    def increment(self, table, row, column, amount):
        self.backend.increment_many([Increment(table, row, column, amount)])

    def get(self, table, row, columns):
        return self.backend.get_row(table, row, columns=columns)

    def scan_prefix(self, table, prefix, columns):
        return iter(self.backend.scan(table, prefix=prefix, columns=columns))

    def close(self):
        pass


class HappybaseWriter:
    """What Socorro's code did: happybase against the HBase Thrift1 server (here the gateway)."""

    def __init__(self, url):
        parsed = parse_url(url)
        options = parsed.options
        self.conn = happybase.Connection(parsed.host, parsed.port, transport=options["transport"],
                                         protocol=options["protocol"], table_prefix=options["table_prefix"])

    def put(self, table, row, cells):
        self.conn.table(table).put(row, cells)

    def delete(self, table, row):
        self.conn.table(table).delete(row)

    def increment(self, table, row, column, amount):
        self.conn.table(table).counter_inc(row, column, amount)

    def get(self, table, row, columns):
        return self.conn.table(table).row(row, columns=columns)

    def scan_prefix(self, table, prefix, columns):
        return iter(self.conn.table(table).scan(row_prefix=prefix, columns=columns))

    def close(self):
        self.conn.close()


def _levels(moment):
    return [moment.strftime(f) for f in ("%Y", "%Y-%m", "%Y-%m-%d", "%Y-%m-%dT%H", "%Y-%m-%dT%H:%M")]


def socorro_submit(w, crash_id, submitted, legacy_zero=False, hang=None, process_type=None, happybase_storage=False):
    """Save a raw crash as Socorro did; return the raw crash."""
    ts = submitted.isoformat()  # '2016-09-18T12:34:56.123456+00:00' (no fraction when microsecond is 0)
    raw = {"ProductName": "Firefox", "submitted_timestamp": ts, "uuid": crash_id}
    if process_type:
        raw["ProcessType"] = process_type
    if hang:
        raw["HangID"] = hang
    if legacy_zero:
        raw["legacy_processing"] = 0
    row = (crash_id[0] + crash_id[-6:] + crash_id).encode()
    cells = {b"ids:ooid": crash_id.encode(), b"meta_data:json": json.dumps(raw).encode(),
             b"raw_data:dump": b"MDMP-socorro", b"timestamps:submitted": ts.encode()}
    if happybase_storage:  # the happybase crash storage: the crash row only
        cells[b"flags:processed"] = b""
        w.put("crash_reports", row, cells)
        return raw
    cells[b"flags:processed"] = b"N"
    if legacy_zero:
        cells[b"flags:legacy_processing"] = b"Y"
    if hang:
        cells[b"ids:hang"] = hang.encode()
    key = (crash_id[0] + ts[:-6] + crash_id).encode()
    ooid = {b"ids:ooid": crash_id.encode()}
    w.put("crash_reports_index_submitted_time", key, ooid)
    w.put("crash_reports_index_unprocessed_flag", key, ooid)
    if legacy_zero:
        w.put("crash_reports_index_legacy_submitted_time", key, ooid)
        w.put("crash_reports_index_legacy_unprocessed_flag", key, ooid)
    if hang:
        w.put("crash_reports_index_hang_id", hang.encode(),
              {b"ids:ooid:" + (process_type or "default").encode(): crash_id.encode()})
        w.put("crash_reports_index_hang_id_submitted_time", (hang[0] + ts[:-6] + hang).encode(),
              {b"ids:ooid:" + (process_type or "default").encode(): crash_id.encode()})
    w.put("crash_reports", row, cells)
    for level_row in _levels(submitted):
        w.increment("metrics", level_row.encode(), b"counters:submitted_crash_reports", 1)
    w.increment("metrics", b"crash_report_queue", b"counters:current_unprocessed_size", 1)
    if legacy_zero:
        w.increment("metrics", b"crash_report_queue", b"counters:current_legacy_unprocessed_size", 1)
    return raw


def socorro_process(w, crash_id, submitted, signature):
    """Save a processed crash as Socorro's processor did (its queue row goes)."""
    ts = submitted.isoformat()
    completed = submitted + timedelta(minutes=5)
    row = (crash_id[0] + crash_id[-6:] + crash_id).encode()
    doc = {"uuid": crash_id, "signature": signature, "success": True,
           "completeddatetime": completed.strftime("%Y-%m-%d %H:%M:%S.%f")}
    w.put("crash_reports", row, {b"processed_data:json": json.dumps(doc).encode(),
                                 b"processed_data:signature": signature.encode(), b"flags:processed": b"Y",
                                 b"timestamps:processed": completed.strftime("%Y-%m-%d %H:%M:%S.%f").encode()})
    w.put("crash_reports_index_signature_ooid", signature.encode() + crash_id.encode(),
          {b"ids:ooid": crash_id.encode()})
    w.delete("crash_reports_index_unprocessed_flag", (crash_id[0] + ts[:-6] + crash_id).encode())
    w.increment("metrics", b"crash_report_queue", b"counters:current_unprocessed_size", -1)


def socorro_2016_new_crashes(w, limit):
    """``new_crashes()`` of hb/crashstorage.py: the legacy queue in unsalted-key order, each row
    deleted (and its counter decremented) as it is yielded; at most ``limit``."""
    scans = [w.scan_prefix("crash_reports_index_legacy_unprocessed_flag", salt.encode(), [b"ids:ooid"])
             for salt in "0123456789abcdef"]
    merged = heapq.merge(*[((row[1:], row, cells) for row, cells in scan) for scan in scans])
    for _unsalted, row, cells in merged:
        if limit == 0:
            return
        limit -= 1
        w.delete("crash_reports_index_legacy_unprocessed_flag", row)
        w.increment("metrics", b"crash_report_queue", b"counters:current_legacy_unprocessed_size", -1)
        yield cells[b"ids:ooid"].decode()


def socorro_2016_save_processed(w, processed_crash):
    """``save_processed`` of hb/crashstorage.py (and the 2013 client's ``put_processed_json``)."""
    crash_id = processed_crash["uuid"]
    row = (crash_id[0] + crash_id[-6:] + crash_id).encode()
    state = w.get("crash_reports", row, [b"flags:processed", b"flags:legacy_processing", b"timestamps:submitted",
                                         b"timestamps:processed"])
    submitted = state.get(b"timestamps:submitted", b"unknown").decode()
    if state.get(b"flags:processed", b"?") == b"N":
        key = crash_id[0] + (submitted[:-6] if submitted[-6] in "-+" else submitted) + crash_id
        w.increment("metrics", b"crash_report_queue", b"counters:current_unprocessed_size", -1)
        w.delete("crash_reports_index_unprocessed_flag", key.encode())
    signature = processed_crash.get("signature")
    signature = "##null##" if signature is None else (signature or "##empty##")
    w.put("crash_reports", row, {b"timestamps:processed": processed_crash["completeddatetime"].encode(),
                                 b"processed_data:signature": signature.encode(),
                                 b"processed_data:json": json.dumps(processed_crash).encode(),
                                 b"flags:processed": b"Y"})
    w.put("crash_reports_index_signature_ooid", signature.encode() + crash_id.encode(),
          {b"ids:ooid": crash_id.encode()})
