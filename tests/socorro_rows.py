"""Rows exactly as Socorro's own HBase code wrote them (``reference/anchors.md``), with plain puts
and increments: through happybase against the gateway, or the backend contract's mutate_rows.

Formats (socorro ``external/hb/crashstorage.py`` and ``external/happybase/crashstorage.py``):
``timestamps:submitted`` is the collector's isoformat with offset; time-index keys are
``salt + ts[:-6] + crash_id`` (19 characters of time when the microsecond is 0);
``flags:legacy_processing`` is ``Y`` (legacy 0) or absent; ``timestamps:processed`` has a space;
the signature index is ``signature + crash_id``; ``hang_id_submitted_time`` rows are
``hang_id[0] + ts[:-6] + hang_id`` holding ``ids:ooid:<ProcessType>`` (both Socorro versions'
``crash_id_to_timestamped_row_id(hang_id, ts)``); the queue counters live in the metrics row
``crash_report_queue``; the happybase storage wrote only the crash row (``flags:processed`` N,
then empty when it saved the processed crash).

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
from datetime import datetime, timedelta, timezone

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
    cells[b"flags:processed"] = b"N"
    if happybase_storage:  # the happybase crash storage: the crash row only (its save_processed writes "")
        w.put("crash_reports", row, cells)
        return raw
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

# -- each writer of Socorro's, call for call (the code named in reference/anchors.md) -------------

def _timestamped_row_id(crash_or_hang_id, timestamp):
    """``crash_id_to_timestamped_row_id`` / ``guid_to_timestamped_row_id`` of both versions."""
    if timestamp[-6] in "-+":
        return (crash_or_hang_id[0] + timestamp[:-6] + crash_or_hang_id).encode()
    return (crash_or_hang_id[0] + timestamp + crash_or_hang_id).encode()


def _submit_rows(w, crash_id, raw, legacy_processing, dumps):
    """The crash row and index rows ``put_json_dump`` (2013) and ``save_raw_crash`` (2016) wrote,
    in their order: the crash row, the time indexes, the hang indexes."""
    ts = raw["submitted_timestamp"]
    cells = {b"flags:processed": b"N", b"meta_data:json": json.dumps(raw).encode(),
             b"timestamps:submitted": ts.encode(), b"ids:ooid": crash_id.encode()}
    cells.update({b"raw_data:" + (b"dump" if name == "upload_file_minidump" else name.encode()): blob
                  for name, blob in dumps.items()})
    indices = ["crash_reports_index_submitted_time", "crash_reports_index_unprocessed_flag"]
    if legacy_processing == 0:  # 2016's default False is == 0 too
        cells[b"flags:legacy_processing"] = b"Y"
        indices += ["crash_reports_index_legacy_unprocessed_flag", "crash_reports_index_legacy_submitted_time"]
    if "HangID" in raw:
        cells[b"ids:hang"] = raw["HangID"].encode()
    w.put("crash_reports", (crash_id[0] + crash_id[-6:] + crash_id).encode(), cells)
    for index in indices:
        w.put(index, _timestamped_row_id(crash_id, ts), {b"ids:ooid": crash_id.encode()})
    if "HangID" in raw:
        column = b"ids:ooid:" + raw.get("ProcessType", "default").encode()
        w.put("crash_reports_index_hang_id_submitted_time", _timestamped_row_id(raw["HangID"], ts),
              {column: crash_id.encode()})
        w.put("crash_reports_index_hang_id", raw["HangID"].encode(), {column: crash_id.encode()})


def _submit_counters(w, raw, legacy_processing, queue_counters):
    ts = raw["submitted_timestamp"]
    process_type = raw.get("ProcessType", "default")
    columns = [b"counters:submitted_crash_reports",
               b"counters:submitted_crash_reports_legacy_throttle_%d" % legacy_processing]
    if process_type != "default":
        columns.append(b"counters:submitted_crash_report_hang_pairs" if "HangID" in raw
                       else b"counters:submitted_oop_%s_crash_reports" % process_type.encode())
    if queue_counters:
        w.increment("metrics", b"crash_report_queue", b"counters:current_unprocessed_size", 1)
        if legacy_processing == 0:
            w.increment("metrics", b"crash_report_queue", b"counters:current_legacy_unprocessed_size", 1)
    for level in (ts[:16], ts[:13], ts[:10], ts[:7], ts[:4]):
        for column in columns:
            w.increment("metrics", level.encode(), column, 1)


def socorro_2013_put_json_dump(w, crash_id, raw, dumps=None):
    """hbase_client.py (2013) ``put_json_dump``: ``legacy_processing`` absent counts as 0 (queued
    in the legacy queue); both queue counters move on every submission."""
    legacy_processing = raw.get("legacy_processing", 0)
    _submit_rows(w, crash_id, raw, legacy_processing, dumps or {"upload_file_minidump": b"MDMP-2013"})
    _submit_counters(w, raw, legacy_processing, queue_counters=True)


def socorro_2016_save_raw_crash(w, crash_id, raw, dumps=None):
    """hb/crashstorage.py (2016) ``save_raw_crash``: ``legacy_processing`` absent is ``False``
    (== 0: legacy-queued, throttle counter ``_0``); the queue counters sit inside its
    ``if process_type != 'default'`` block, so only a plugin/content crash moves them."""
    legacy_processing = raw.get("legacy_processing", False)
    _submit_rows(w, crash_id, raw, legacy_processing, dumps or {"upload_file_minidump": b"MDMP-2016"})
    _submit_counters(w, raw, legacy_processing, queue_counters=raw.get("ProcessType", "default") != "default")


def happybase_save_raw_crash(w, crash_id, raw, dumps=None):
    """happybase/crashstorage.py ``save_raw_crash``: the crash row only (``flags:processed`` N),
    no index row, no counter."""
    cells = {b"flags:processed": b"N", b"meta_data:json": json.dumps(raw).encode(),
             b"timestamps:submitted": raw["submitted_timestamp"].encode(), b"ids:ooid": crash_id.encode()}
    cells.update({b"raw_data:" + (b"dump" if name == "upload_file_minidump" else name.encode()): blob
                  for name, blob in (dumps or {"upload_file_minidump": b"MDMP-happybase"}).items()})
    w.put("crash_reports", (crash_id[0] + crash_id[-6:] + crash_id).encode(), cells)


def happybase_save_processed(w, processed_crash):
    """happybase/crashstorage.py ``save_processed``: the crash row only, ``flags:processed`` empty;
    no queue row deleted, no signature row."""
    crash_id = processed_crash["uuid"]
    w.put("crash_reports", (crash_id[0] + crash_id[-6:] + crash_id).encode(), {
        b"timestamps:processed": processed_crash["completeddatetime"].encode(),
        b"processed_data:signature": processed_crash["signature"].encode(),
        b"processed_data:json": json.dumps(processed_crash).encode(), b"flags:processed": b""})

# -- issue 39: four crash-id days of Socorro's writers --------------------------------------------


def _processed(crash_id, signature):
    return {"uuid": crash_id, "signature": signature, "success": True,
            "completeddatetime": "2016-09-18 23:00:00.000000"}


SOCORRO_DAYS = [datetime(2016, 9, d, tzinfo=timezone.utc) for d in (18, 19, 20, 21)]


def _dated(salt, n, day):
    return f"{salt}{n:07x}-0000-4000-8000-00000" + "2" + day.strftime("%y%m%d")


def _socorro_raw(crash_id, at, **fields):
    # the collector's submitted_timestamp: utc_now().isoformat(), with its offset
    return {"ProductName": "Firefox", "Version": "48.0", "uuid": crash_id, "submitted_timestamp": at.isoformat(),
            **fields}


def socorro_days_written(writer):
    """Twelve crashes on four crash-id days, each written call for call by one of Socorro's
    writers; returns ``{name: (crash id, submitted)}``."""
    at = {}

    def crash(name, salt, n, day, hour, minute, second, micro):
        moment = SOCORRO_DAYS[day].replace(hour=hour, minute=minute, second=second, microsecond=micro)
        at[name] = (_dated(salt, n, SOCORRO_DAYS[day]), moment)
        return at[name]

    # 2016: two legacy crashes taken by Socorro's new_crashes(); its processor saves one, dies on the other
    taken, dead = crash("taken", "4", 4, 1, 9, 0, 0, 0), crash("dead", "5", 5, 1, 9, 5, 1, 500)
    socorro_2016_save_raw_crash(writer, taken[0], _socorro_raw(taken[0], taken[1]))
    socorro_2016_save_raw_crash(writer, dead[0], _socorro_raw(dead[0], dead[1]))
    assert list(socorro_2016_new_crashes(writer, 2)) == [taken[0], dead[0]]
    socorro_2016_save_processed(writer, _processed(taken[0], "js::Taken"))
    # 2013: a hang pair (whole seconds: 19-character keys), a throttled crash it processed
    pair = "3c6a9f1e-0000-4000-8000-000000000018"
    for name, salt, n, second, process_type in (("plugin", "1", 1, 7, "plugin"), ("browser", "2", 2, 8, None)):
        crash_id, moment = crash(name, salt, n, 0, 12, 35, second, 0)
        fields = {"HangID": pair, **({"ProcessType": process_type} if process_type else {})}
        socorro_2013_put_json_dump(writer, crash_id, _socorro_raw(crash_id, moment, **fields))
    done = crash("processed_2013", "3", 3, 0, 13, 0, 1, 250000)
    socorro_2013_put_json_dump(writer, done[0], _socorro_raw(done[0], done[1], legacy_processing=1))
    socorro_2016_save_processed(writer, _processed(done[0], "js::Old"))
    # 2016: a throttled crash it processed, and a content hang crash left queued
    throttled = crash("processed_2016", "6", 6, 1, 10, 0, 2, 1000)
    socorro_2016_save_raw_crash(writer, throttled[0], _socorro_raw(throttled[0], throttled[1], legacy_processing=1))
    socorro_2016_save_processed(writer, _processed(throttled[0], "js::Taken"))
    content = crash("content", "9", 9, 2, 8, 0, 0, 120000)
    socorro_2016_save_raw_crash(writer, content[0], _socorro_raw(content[0], content[1], legacy_processing=1,
                                                                 HangID="zz-content-hang", ProcessType="content"))
    # the happybase storage: crash rows only, one processed
    for name, salt, n, day, hour in (("happybase_done", "7", 7, 2, 14), ("happybase", "8", 8, 2, 15),
                                     ("happybase_late", "b", 11, 3, 16)):
        crash_id, moment = crash(name, salt, n, day, hour, 10, 0, 250000)
        happybase_save_raw_crash(writer, crash_id, _socorro_raw(crash_id, moment))
    happybase_save_processed(writer, {**_processed(at["happybase_done"][0], "js::Happy"),
                                      "completeddatetime": "2016-09-20 14:15:00.000000"})
    # 2013's put_processed_json on a crash still in the legacy queue (its pointer is left behind)
    left = crash("legacy_left", "a", 10, 3, 11, 0, 0, 0)
    socorro_2013_put_json_dump(writer, left[0], _socorro_raw(left[0], left[1]))
    socorro_2016_save_processed(writer, _processed(left[0], "js::Left"))
    plain = crash("plain", "c", 12, 3, 18, 30, 30, 300)
    socorro_2016_save_raw_crash(writer, plain[0], _socorro_raw(plain[0], plain[1], legacy_processing=1))
    return at
