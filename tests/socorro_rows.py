"""Rows exactly as Socorro's own HBase code wrote them (``reference/anchors.md``), with plain puts
and increments: through happybase against the gateway, or the backend contract's mutate_rows.

Formats (socorro ``external/hb/crashstorage.py`` and ``external/happybase/crashstorage.py``):
``timestamps:submitted`` is the collector's isoformat with offset; time-index keys are
``salt + ts[:-6] + crash_id`` (19 characters of time when the microsecond is 0);
``flags:legacy_processing`` is ``Y`` (legacy 0) or absent; ``timestamps:processed`` has a space;
the signature index is ``signature + crash_id``; ``hang_id_submitted_time`` is keyed by the hang
id; the queue counters live in the metrics row ``crash_report_queue``; the happybase storage wrote
only the crash row, with ``flags:processed`` empty.
"""

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
        w.put("crash_reports_index_hang_id_submitted_time", hang.encode(), {**ooid, b"ids:hang": hang.encode()})
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
