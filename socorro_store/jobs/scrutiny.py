"""Index scrutiny and repair (``verify-indexes``), and queue-size reconcile (``reconcile-queue``).

Like Phoenix's IndexScrutinyTool: for each of the 7 index tables, every pointer is

* VALID   — its crash row exists and says the pointer should exist;
* ORPHAN  — no crash row, or one that says otherwise (processed crash still queued, stale
            signature, other submitted time);
* MISSING — a crash row whose pointer is absent (a crash row without its queue pointer is a lost
            crash: repair re-queues it).

Which pointers a crash row implies (layouts in :mod:`socorro_store.schema.keys`):

=========================================  ==============================================
submitted_time                             always
unprocessed_flag                           not processed; plus ``priority/…`` while
                                           ``flags:priority_processing`` is set
legacy_unprocessed_flag                    legacy_processing 0 and not processed
legacy_submitted_time                      legacy_processing 0
hang_id (column ``ids:ooid:<ProcessType>``)  ``ids:hang`` set
hang_id_submitted_time                     ``ids:hang`` set
signature_ooid                             processed (its current signature)
=========================================  ==============================================

``repair`` writes the missing pointers (queue rows with the unclaimed marker) and deletes orphans
whose newest cell is older than ``orphan_age_s`` (default 10 minutes: pointers are written before
their crash row, so a young orphan may be a save in flight).  Each orphan's crash row is re-read
just before the delete.  Memory: the expected pointers of every crash are held at once.
"""

import time

from ..backends.base import RowMutation
from ..checks import is_number
from ..crashstore import counters
from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema.crash_facts import process_type_of
from . import runs

INDEX_TABLES = (K.SUBMITTED_TIME, K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG, K.LEGACY_SUBMITTED_TIME,
                K.HANG_ID, K.HANG_ID_SUBMITTED_TIME, K.SIGNATURE_OOID)
DEFAULT_ORPHAN_AGE_S = 600
_COLUMNS = [b"flags", K.COL_OOID, K.COL_SUBMITTED, K.COL_HANG, K.COL_SIGNATURE, K.COL_META]


def expected_pointers(crash_id, cells):
    """``{table: {(row, column): puts}}`` of the pointers a crash row implies."""
    submitted = K.parse_key_timestamp(cells[K.COL_SUBMITTED])
    key = K.time_index_key(crash_id, submitted)
    ooid = {K.COL_OOID: crash_id.encode("ascii")}
    queue = ooid
    processed = cells.get(K.COL_PROCESSED) == b"Y"
    legacy = cells.get(K.COL_LEGACY) == b"0"
    out = {K.SUBMITTED_TIME: {(key, K.COL_OOID): ooid}}
    if not processed:
        out.setdefault(K.UNPROCESSED_FLAG, {})[(key, K.COL_OOID)] = queue
        if legacy:
            out[K.LEGACY_UNPROCESSED_FLAG] = {(key, K.COL_OOID): queue}
    if cells.get(K.COL_PRIORITY):
        pkey = K.priority_key(crash_id, K.parse_key_timestamp(cells[K.COL_PRIORITY]))
        out.setdefault(K.UNPROCESSED_FLAG, {})[(pkey, K.COL_OOID)] = queue
    if legacy:
        out[K.LEGACY_SUBMITTED_TIME] = {(key, K.COL_OOID): ooid}
    hang = cells.get(K.COL_HANG)
    if hang:
        column = K.hang_column(process_type_of(cells.get(K.COL_META, b"{}")))
        out[K.HANG_ID] = {(hang, column): {column: crash_id.encode("ascii")}}
        out[K.HANG_ID_SUBMITTED_TIME] = {(key, K.COL_OOID): {**ooid, K.COL_HANG: hang}}
    if processed and K.COL_SIGNATURE in cells:
        signature = cells[K.COL_SIGNATURE].decode("utf-8", "surrogatepass")
        out[K.SIGNATURE_OOID] = {(K.signature_index_key(signature, submitted, crash_id), K.COL_OOID): ooid}
    return out


def _pointers(backend, table):
    """Yield ``(row, column, crash id bytes, newest cell ts)`` of every pointer in ``table``."""
    for row, cells in backend.scan(table, columns=[b"ids"], include_timestamp=True, page_size=1000):
        newest = max(ts for _v, ts in cells.values())
        for column, (value, _ts) in cells.items():
            if column == K.COL_OOID or (table == K.HANG_ID and K.is_hang_column(column)):
                yield row, column, value, newest


def verify_indexes(backend, repair=False, orphan_age_s=DEFAULT_ORPHAN_AGE_S, heartbeat=None, now_ms=None):
    """Count VALID / MISSING / ORPHAN pointers per index table; with ``repair``, fix them.

    Returns ``{table: {"valid", "missing", "orphan", "repaired_missing", "deleted_orphans"}}``.
    """
    if not is_number(orphan_age_s) or orphan_age_s < 0:
        raise InvalidArgument(f"orphan_age_s must be a number >= 0: {orphan_age_s!r}")
    expected = {table: {} for table in INDEX_TABLES}
    for n, (_row, cells) in enumerate(backend.scan(K.CRASH_REPORTS, columns=_COLUMNS, page_size=500)):
        if K.COL_SUBMITTED not in cells or K.COL_OOID not in cells:
            continue
        crash_id = cells[K.COL_OOID].decode("ascii", "replace")
        for table, pointers in expected_pointers(crash_id, cells).items():
            expected[table].update(pointers)
        if heartbeat and n % 1000 == 0:
            heartbeat()
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    report = {}
    for table in INDEX_TABLES:
        want = expected[table]
        counts = {"valid": 0, "missing": 0, "orphan": 0, "repaired_missing": 0, "deleted_orphans": 0}
        orphans = []
        for row, column, value, newest in _pointers(backend, table):
            puts = want.pop((row, column), None)
            if puts is not None and puts.get(column) == value:
                counts["valid"] += 1
            else:
                counts["orphan"] += 1
                if now_ms - newest >= orphan_age_s * 1000:
                    orphans.append((row, column, value))
            if heartbeat:
                heartbeat()
        counts["missing"] = len(want)
        if repair:
            counts["repaired_missing"] = _write_missing(backend, table, want)
            counts["deleted_orphans"] = _delete_orphans(backend, table, orphans)
        report[table] = counts
    return report


def _write_missing(backend, table, want):
    """Write the missing pointers their crash still implies (crash rows re-read first: a crash
    processed since the scan must not get its queue pointer back)."""
    if not want:
        return 0
    ids = {}
    for puts in want.values():
        for value in puts.values():
            crash_id = value.decode("ascii", "replace")
            if K.CRASH_ID_RE.match(crash_id):
                ids[K.crash_row_key(crash_id)] = crash_id
    still = _implied(backend, table, ids)
    mutations = {}
    for (row, column), puts in want.items():
        if (row, column) in still:
            mutations.setdefault(row, RowMutation(row)).puts.update(still[(row, column)])
    batch = list(mutations.values())
    for i in range(0, len(batch), 1000):
        backend.mutate_rows(table, batch[i:i + 1000])
    return sum(1 for key in want if key in still)


def _implied(backend, table, row_to_crash_id):
    """``{(row, column): puts}`` of ``table``'s pointers implied now by the given crash rows."""
    rows = backend.get_rows(K.CRASH_REPORTS, list(row_to_crash_id), columns=_COLUMNS) if row_to_crash_id else {}
    implied = {}
    for cells in rows.values():
        if K.COL_SUBMITTED in cells:
            crash_id = cells[K.COL_OOID].decode("ascii")
            implied.update(expected_pointers(crash_id, cells).get(table, {}))
    return implied


def _delete_orphans(backend, table, orphans):
    """Delete orphans whose crash still does not imply them (crash rows re-read first)."""
    if not orphans:
        return 0
    ids = {}
    for _row, _column, value in orphans:
        crash_id = value.decode("ascii", "replace")
        if K.CRASH_ID_RE.match(crash_id):
            ids[K.crash_row_key(crash_id)] = crash_id
    still = _implied(backend, table, ids)
    deletes = []
    for row, column, _value in orphans:
        if (row, column) in still:
            continue  # the crash changed since the scan and now implies this pointer
        if table == K.HANG_ID:
            deletes.append(RowMutation(row, deletes=[column]))
        else:
            deletes.append(RowMutation(row, delete_row=True))
    for i in range(0, len(deletes), 1000):
        backend.mutate_rows(table, deletes[i:i + 1000])
    return len(deletes)


def run_verify_indexes(backend, repair=False, orphan_age_s=DEFAULT_ORPHAN_AGE_S, **job_options):
    """Run :func:`verify_indexes` as job ``verify-indexes`` (one live run, recorded)."""
    if not is_number(orphan_age_s) or orphan_age_s < 0:
        raise InvalidArgument(f"orphan_age_s must be a number >= 0: {orphan_age_s!r}")

    def body(ctx):
        ctx.set_phase("repair" if repair else "verify")
        report = verify_indexes(backend, repair, orphan_age_s, heartbeat=ctx.heartbeat)
        ctx.add_counts(**{k: sum(t[k] for t in report.values()) for k in ("valid", "missing", "orphan")})
        return report

    run = runs.run_job(backend, "verify-indexes", body, params={"repair": repair}, resume=False, **job_options)
    return run.result

# -- queue sizes ----------------------------------------------------------------------------

def count_queues(backend):
    """Pointers with a crash row in each unprocessed queue: ``{standard, legacy, priority}``."""
    from ..crashstore.queue import QUEUES, merged_scan, with_crash_rows

    sizes = {}
    for name, (table, prefix) in QUEUES.items():
        rows = merged_scan(backend, table, prefix, columns=[K.COL_OOID], page_size=1000)
        rows = ((row, cells) for row, cells in rows if cells.get(K.COL_OOID))
        sizes[name] = sum(1 for _ in with_crash_rows(backend, rows, lambda item: item[1][K.COL_OOID], 500))
    return sizes


def reconcile_queue(backend):
    """Make ``crash_report_queues`` say the true queue sizes; return before/after.

    The size of a queue is ``inserts_X - deletes_X``; the true size is the number of its pointers
    whose crash row exists.  ``deletes_X`` is rewritten (a put) so that the difference is true;
    ``inserts_X`` keeps its history.  The processed queues have no index to count from (no
    downstream feeder in this library) and are left alone.
    """
    live = counters.read_counters(backend, K.METRICS, K.QUEUE_ROW)
    before = counters.queue_sizes(backend)
    actual = count_queues(backend)
    suffix = {"standard": "unprocessed", "legacy": "unprocessed_legacy", "priority": "unprocessed_priority"}
    puts = {}
    for name, size in actual.items():
        inserts = live.get("inserts_" + suffix[name], 0)
        deletes = inserts - size
        if live.get("deletes_" + suffix[name], 0) != deletes:
            puts[K.counter_column("deletes_" + suffix[name])] = K.encode_counter(deletes)
    if puts:
        backend.mutate_rows(K.METRICS, [RowMutation(K.QUEUE_ROW, puts)])
    return {"before": {k: before[k] for k in actual}, "after": actual, "corrected": len(puts)}


def run_reconcile_queue(backend, **job_options):
    run = runs.run_job(backend, "reconcile-queue", lambda ctx: reconcile_queue(backend), resume=False,
                       **job_options)
    return run.result
