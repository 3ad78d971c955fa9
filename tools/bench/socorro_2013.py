"""Socorro's own HBase access pattern (2013-2016), re-created call for call on the backend contract.

The source is mozilla-services/socorro ``socorro/external/hb/crashstorage.py``, class
``HBaseCrashStorage``, as it stood before HBase was removed (2016); ``socorro/external/hbase/
hbase_client.py`` (``HBaseConnectionForCrashReports.put_json_dump`` / ``put_processed_json``) is
the older client it replaced, with the same calls.  Over the Thrift gateway each contract call
below is one RPC, as each Thrift call was in Socorro.

* :meth:`Socorro2013.save_raw_crash` is ``HBaseCrashStorage.save_raw_crash``: one ``mutateRow`` of
  the crash row; one ``mutateRow`` per index table (``_put_crash_report_indices``: submitted_time
  and unprocessed_flag, plus legacy_unprocessed_flag and legacy_submitted_time when
  ``legacy_processing == 0``); two for a hang (hang_id_submitted_time, hang_id); then one
  ``atomicIncrement`` per counter per time level (minute, hour, day, month, year) for
  ``submitted_crash_reports``, ``..._legacy_throttle_<n>`` and, for a process type other than
  ``default``, ``submitted_crash_report_hang_pairs`` (a hang) or ``submitted_oop_<type>_...``.
  The queue-size increments (``current_unprocessed_size``, ``current_legacy_unprocessed_size``)
  sit inside Socorro's ``if process_type != 'default'`` block, so only out-of-process crashes
  made them: reproduced as written.
* :meth:`Socorro2013.new_crashes` is ``HBaseCrashStorage.new_crashes``: one pass of
  ``_merge_scan_with_prefix`` over crash_reports_index_legacy_unprocessed_flag, which opens the 16
  salted scanners at once (``scannerOpenWithPrefix``), fetches one row per ``scannerGet``
  (``_salted_scanner_iterable``), merges them with a heap, and for each row it yields calls
  ``_delete_from_legacy_processing_index``: one ``deleteAllRow`` and one ``atomicIncrement`` of
  ``current_legacy_unprocessed_size`` by -1.  Here a scan with ``page_size=1`` is that scanner:
  one call per row, plus the final empty fetch.
* :meth:`Socorro2013.save_processed` is ``HBaseCrashStorage.save_processed``:
  ``_get_report_processing_state`` (one ``getRowWithColumns``); when ``flags:processed`` is
  ``N``, one ``atomicIncrement`` of ``current_unprocessed_size`` by -1 and one ``deleteAllRow``
  of the unprocessed_flag row; one ``mutateRow`` of the processed columns; one ``mutateRow`` of
  the signature index (Socorro's ``signature + crash_id`` row key).

Row keys use this store's layouts (``schema.keys``) except the signature index, whose key is
Socorro's; key layout does not change the number of calls.
"""

import heapq
import json
import threading
from datetime import datetime

from socorro_store.backends import RowMutation
from socorro_store.schema import keys as K

_LEVEL_WIDTHS = (16, 13, 10, 7, 4)  # minute, hour, day, month, year prefixes of the ISO time
_QUEUE_SIZE = b"counters:current_unprocessed_size"
_LEGACY_QUEUE_SIZE = b"counters:current_legacy_unprocessed_size"


def socorro_signature_key(signature, crash_id):
    """Socorro's signature index key, ``signature + crash_id`` (ambiguous for prefixes)."""
    return signature.encode("utf-8", "surrogatepass") + crash_id.encode()


def crash_row_puts(raw_crash, dumps, crash_id):
    """The crash row cells of Socorro's ``save_raw_crash`` (without the legacy and hang flags)."""
    puts = {K.COL_PROCESSED: b"N", K.COL_META: json.dumps(raw_crash).encode(),
            K.COL_SUBMITTED: raw_crash["submitted_timestamp"].encode(), K.COL_OOID: crash_id.encode()}
    for name, dump in dumps.items():
        puts[K.dump_column(name or K.DEFAULT_DUMP)] = dump
    return puts


def processed_puts(processed_crash):
    """``(signature, cells)`` of Socorro's ``save_processed`` crash row mutation."""
    signature = processed_crash.get("signature")
    signature = K.NULL_SIGNATURE if signature is None else (signature or K.EMPTY_SIGNATURE)
    return signature, {K.COL_PROCESSED_AT: processed_crash["completeddatetime"].encode(),
                       K.COL_SIGNATURE: signature.encode("utf-8", "surrogatepass"),
                       K.COL_PROCESSED_JSON: json.dumps(processed_crash).encode(),
                       K.COL_PROCESSED: b"Y"}


def socorro_hang_time_key(hang_id, submitted_timestamp):
    """Socorro's ``crash_id_to_timestamped_row_id(hang_id, ...)``: salt + time (no offset) + hang id."""
    stamp = submitted_timestamp[:-6] if submitted_timestamp[-6] in "-+" else submitted_timestamp
    return (hang_id[0] + stamp + hang_id).encode()


def _index_key(crash_id, submitted_timestamp):
    return K.time_index_key(crash_id, datetime.fromisoformat(submitted_timestamp))


class Socorro2013:
    """Socorro's ``HBaseCrashStorage`` calls on one backend.  Thread-safe as the backend is."""

    def __init__(self, backend):
        self.backend = backend

    def save_raw_crash(self, raw_crash, dumps, crash_id):
        backend = self.backend
        submitted = raw_crash["submitted_timestamp"]
        legacy = raw_crash.get("legacy_processing", False)
        puts = crash_row_puts(raw_crash, dumps, crash_id)
        indices = [K.SUBMITTED_TIME, K.UNPROCESSED_FLAG]
        if legacy == 0:
            puts[K.COL_LEGACY] = b"Y"
            indices += [K.LEGACY_UNPROCESSED_FLAG, K.LEGACY_SUBMITTED_TIME]
        process_type = raw_crash.get("ProcessType", "default")
        hang_id = raw_crash.get("HangID")
        if hang_id is not None:
            puts[K.COL_HANG] = hang_id.encode()
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(crash_id), puts)])
        index_key = _index_key(crash_id, submitted)
        for table in indices:
            backend.mutate_rows(table, [RowMutation(index_key, {K.COL_OOID: crash_id.encode()})])
        if hang_id is not None:
            hang_cell = {K.hang_column(process_type): crash_id.encode()}
            backend.mutate_rows(K.HANG_ID_SUBMITTED_TIME, [RowMutation(socorro_hang_time_key(hang_id, submitted),
                                                                       hang_cell)])
            backend.mutate_rows(K.HANG_ID, [RowMutation(K.hang_row_key(hang_id), hang_cell)])
        counters = [b"counters:submitted_crash_reports",
                    b"counters:submitted_crash_reports_legacy_throttle_%d" % int(legacy)]
        if process_type != "default":
            counters.append(b"counters:submitted_crash_report_hang_pairs" if hang_id is not None
                            else f"counters:submitted_oop_{process_type}_crash_reports".encode())
            backend.increment(K.METRICS, K.QUEUE_ROW, _QUEUE_SIZE, 1)
            if legacy == 0:
                backend.increment(K.METRICS, K.QUEUE_ROW, _LEGACY_QUEUE_SIZE, 1)
        for width in _LEVEL_WIDTHS:
            row = submitted[:width].encode()
            for column in counters:
                backend.increment(K.METRICS, row, column, 1)

    def new_crashes(self):
        """One pass over the legacy queue: yield crash ids in submission order, deleting each
        queue row and decrementing the queue size as it is yielded."""
        backend = self.backend
        scanners = [backend.scan(K.LEGACY_UNPROCESSED_FLAG, prefix=salt_char.encode(),
                                 columns=[K.COL_OOID], page_size=1) for salt_char in K.SALTS]
        for row, cells in heapq.merge(*scanners, key=lambda item: item[0][1:]):
            backend.mutate_rows(K.LEGACY_UNPROCESSED_FLAG, [RowMutation(row, delete_row=True)])
            backend.increment(K.METRICS, K.QUEUE_ROW, _LEGACY_QUEUE_SIZE, -1)
            yield cells[K.COL_OOID].decode()

    def save_processed(self, processed_crash):
        backend = self.backend
        crash_id = processed_crash["uuid"]
        row = K.crash_row_key(crash_id)
        state = backend.get_row(K.CRASH_REPORTS, row, columns=[K.COL_PROCESSED, K.COL_LEGACY, K.COL_SUBMITTED,
                                                               K.COL_PROCESSED_AT])
        if state.get(K.COL_PROCESSED) == b"N":
            backend.increment(K.METRICS, K.QUEUE_ROW, _QUEUE_SIZE, -1)
            index_key = _index_key(crash_id, state[K.COL_SUBMITTED].decode())
            backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(index_key, delete_row=True)])
        signature, puts = processed_puts(processed_crash)
        backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(row, puts)])
        backend.mutate_rows(K.SIGNATURE_OOID, [RowMutation(socorro_signature_key(signature, crash_id),
                                                           {K.COL_OOID: crash_id.encode()})])


class SharedPass:
    """Socorro's processor shape: one queue pass shared by the processor's worker threads.

    Socorro's processor (``socorro/lib/threaded_task_manager.py``, ``ThreadedTaskManager``) ran
    one iterator over ``new_crashes()`` and handed each crash id to a pool of worker threads
    that called ``save_processed``.  Here each worker pulls the next id from the one live pass
    under a lock (the pull does the pass's scannerGet, deleteAllRow and decrement, as the
    iterator thread did); when the pass ends, the next pull starts a new pass.
    """

    def __init__(self, storage):
        self.storage = storage
        self._lock = threading.Lock()
        self._pass = None

    def next_crash(self):
        """The next crash id, or None when a fresh pass found the queue empty."""
        with self._lock:
            for _attempt in range(2):
                if self._pass is None:
                    self._pass, fresh = self.storage.new_crashes(), True
                else:
                    fresh = False
                crash_id = next(self._pass, None)
                if crash_id is not None:
                    return crash_id
                self._pass = None
                if fresh:
                    return None
            return None
