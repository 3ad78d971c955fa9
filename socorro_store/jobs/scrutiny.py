"""Index scrutiny and repair (``verify-indexes``), and queue-size reconcile (``reconcile-queue``).

Like Phoenix's IndexScrutinyTool: for each of the 7 index tables, every pointer is

* VALID   — its crash row exists and says the pointer should exist;
* ORPHAN  — no crash row, or one that says otherwise (processed crash still queued, stale
            signature, other submitted time);
* FOREIGN — in a layout of Socorro's that is not ours (its signature index ``signature +
            crash_id``; its ``hang_id_submitted_time`` rows ``hang_id[0] + ts + hang_id``
            holding ``ids:ooid:<ProcessType>``, told apart from ours by that column): neither
            VALID nor ORPHAN of ours, left alone unless ``drop_foreign``;
* UNREADABLE — its crash row exists but cannot be read (a cell in no known format, or an
            ``ids:ooid`` that is not a crash id): kept;
* MALFORMED — (also an ORPHAN) a row of our index tables whose key is in no layout at all, ours
            or Socorro's (e.g. a crash id ending in a newline, accepted by older versions).
            Readers skip such rows (:func:`~socorro_store.crashstore.queue.readable_rows`);
            this is where they are reported, and ``repair`` deletes them as orphans;
* MISSING — a crash row whose pointer is absent (a crash row without its queue pointer is a lost
            crash: repair re-queues it).  Crash rows without any index row (Socorro's happybase
            storage wrote none) are found because the crash rows themselves are scanned.

Crash rows are judged by their key too, counted under ``submitted_time``: one in Socorro's
pre-salt layout (``YYMMDD + crash id``, which its 2013 client still read with ``old_format``) is
FOREIGN, kept whatever ``drop_foreign`` says and implying no pointer of ours (its pointers are
orphans: no reader of ours or of Socorro's finds the crash through them); one whose key is in no
layout of its ``ids:ooid`` is UNREADABLE.  A day range reads both layouts of its days.

Socorro's time-index keys (``salt + ts[:-6] + crash_id``) are ours when the microsecond is not 0
and a 19-character variant of ours when it is: both count as the same pointer.

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

``since``/``until`` (dates) restrict the check to crashes whose crash-id date is in
``[since, until)``: their crash rows are read by day prefix, and only their pointers are judged.
The time-keyed pointers are scanned from a day before the earliest to a day after the latest of
``since``, ``until`` and those crashes' submitted times: a crash id's date need not be its
submission's (Socorro's collector kept a client's crash id with ``accept_submitted_crash_id``),
and each such pointer is judged as the whole-table check judges it.

``repair`` writes the missing pointers (crash rows re-read first: a crash processed since the
check must not get its queue pointer back), deletes orphans whose newest cell is older than
``orphan_age_s`` (default 10 minutes: pointers are written before their crash row, so a young
orphan may be a save in flight) after re-reading their crash rows, and with ``drop_foreign``
deletes foreign pointers whose crash row exists (its own pointer was just written).  A standard
or legacy queue pointer whose crash row says processed is stale whatever its age (no writer
queues a processed crash; Socorro's 2013 ``put_processed_json`` left the legacy one behind):
it is deleted at once.  Nothing else is deleted.

:func:`problems_left` says whether anything is left to fix: what a check found, or what a repair
found and could not fix (young orphans, unreadable crash rows).  ``verify-indexes`` exits 1 then,
0 otherwise.

Memory: one page of crash rows or pointers at a time (multi-row gets check each page); nothing
is held across pages but the counts.
"""

import time
from datetime import datetime, timedelta, timezone

from ..backends.base import RowMutation
from ..checks import is_number
from ..crashstore import counter_deriver, counters, cut_over
from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema.crash_facts import stored_process_type
from ..schema.stored import (
    canonical_time_index_key,
    parse_socorro_signature_key,
    parse_stored_time_index_key,
    presalt_crash_row_key,
    stored_legacy,
    stored_processed,
    stored_time,
    time_index_key_forms,
)
from . import data_days, runs

INDEX_TABLES = (K.SUBMITTED_TIME, K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG, K.LEGACY_SUBMITTED_TIME,
                K.HANG_ID, K.HANG_ID_SUBMITTED_TIME, K.SIGNATURE_OOID)
TIME_TABLES = (K.SUBMITTED_TIME, K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG, K.LEGACY_SUBMITTED_TIME,
               K.HANG_ID_SUBMITTED_TIME)
#: queue tables whose time-keyed pointers are stale, whatever their age, once their crash is processed
_QUEUE_TABLES = (K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG)
_HANG_COLUMN_TABLES = (K.HANG_ID, K.HANG_ID_SUBMITTED_TIME)  # Socorro's hang rows: ids:ooid:<ProcessType>
#: key ranges of the rows whose first byte is not a salt (hex digit): below "0", ":"-"`", from "g"
_NOT_SALTED = ((None, b"0"), (b":", b"a"), (b"g", None))
DEFAULT_ORPHAN_AGE_S = 600
PAGE = 500
_COLUMNS = [b"flags", K.COL_OOID, K.COL_SUBMITTED, K.COL_HANG, K.COL_SIGNATURE]
COUNTS = ("valid", "missing", "orphan", "foreign", "unreadable", "malformed", "repaired_missing",
          "deleted_orphans", "dropped_foreign")


class _Unreadable(Exception):
    pass


def expected_pointers(crash_id, cells):
    """``{table: {(row, column): puts}}`` of the pointers a crash row implies (tolerant of
    Socorro's cell formats; :class:`_Unreadable` when its submitted time cannot be read)."""
    try:
        return _expected_pointers(crash_id, cells)
    except InvalidArgument as exc:  # a submitted time, priority stamp, crash id or ProcessType
        raise _Unreadable(str(exc)) from None


def _expected_pointers(crash_id, cells):
    submitted = stored_time(cells[K.COL_SUBMITTED])
    key = K.time_index_key(crash_id, submitted)
    ooid = {K.COL_OOID: crash_id.encode("ascii")}
    processed = stored_processed(cells)
    legacy = stored_legacy(cells.get(K.COL_LEGACY)) == 0
    out = {K.SUBMITTED_TIME: {(key, K.COL_OOID): ooid}}
    if not processed:
        out.setdefault(K.UNPROCESSED_FLAG, {})[(key, K.COL_OOID)] = ooid
        if legacy:
            out[K.LEGACY_UNPROCESSED_FLAG] = {(key, K.COL_OOID): ooid}
    if cells.get(K.COL_PRIORITY):
        pkey = K.priority_key(crash_id, K.parse_key_timestamp(cells[K.COL_PRIORITY]))
        out.setdefault(K.UNPROCESSED_FLAG, {})[(pkey, K.COL_OOID)] = ooid
    if legacy:
        out[K.LEGACY_SUBMITTED_TIME] = {(key, K.COL_OOID): ooid}
    hang = cells.get(K.COL_HANG)
    if hang:
        column = K.hang_column(stored_process_type(cells) or "default")
        out[K.HANG_ID] = {(hang, column): {column: crash_id.encode("ascii")}}
        out[K.HANG_ID_SUBMITTED_TIME] = {(key, K.COL_OOID): {**ooid, K.COL_HANG: hang}}
    if processed and K.COL_SIGNATURE in cells:
        signature = cells[K.COL_SIGNATURE].decode("utf-8", "surrogatepass")
        out[K.SIGNATURE_OOID] = {(K.signature_index_key(signature, submitted, crash_id), K.COL_OOID): ooid}
    return out


def _with_process_type(backend, found):
    """Add ``meta_data:json`` to the rows of ``found`` that need a ProcessType and lack
    ``flags:process_type`` (older rows, Socorro's): one get for those rows only."""
    needing = [row for row, cells in found.items() if cells.get(K.COL_HANG) and stored_process_type(cells) is None]
    if needing:
        for row, cells in backend.get_rows(K.CRASH_REPORTS, needing, columns=[K.COL_META]).items():
            found[row].update(cells)
    return found


def _read_crashes(backend, crash_ids):
    """``{crash_id: cells}`` of the crash rows that exist (small columns, JSON only if needed)."""
    rows = {K.crash_row_key(cid): cid for cid in crash_ids}
    found = backend.get_rows(K.CRASH_REPORTS, list(rows), columns=_COLUMNS) if rows else {}
    return {rows[row]: cells for row, cells in _with_process_type(backend, found).items()
            if K.COL_SUBMITTED in cells}


def _implied(backend, table, crash_ids, with_processed=False):
    """``({(row, column): puts}, {unreadable crash ids})`` of ``table``'s pointers implied now;
    ``with_processed``: also the set of those crashes whose row says processed."""
    implied, unreadable, processed = {}, set(), set()
    for crash_id, cells in _read_crashes(backend, crash_ids).items():
        try:
            implied.update(expected_pointers(crash_id, cells).get(table, {}))
        except _Unreadable:
            unreadable.add(crash_id)
        if stored_processed(cells):
            processed.add(crash_id)
    return (implied, unreadable, processed) if with_processed else (implied, unreadable)


def _crash_pages(backend, since, until, counts, page_size=PAGE, progress=lambda phase, done, total: None):
    """Pages of ``[(crash id, cells)]``: every crash row in our layout, or those of crash-id days
    in range (``progress`` told of each day read, or of the one full scan); rows in another
    layout are counted in ``counts`` (see :func:`_crash_row_layout`)."""
    if since is None:
        steps = [("crash rows", backend.scan(K.CRASH_REPORTS, columns=_COLUMNS, page_size=page_size))]
    else:
        # only the days that hold data (skipped to, as rollup does): a calendar walk cost 16
        # scans for every empty day since ``since``.  Each day's rows come from a function call:
        # a generator expression here read the loop's last day when it ran (issue 39)
        steps = [("days", data_days.crash_rows_of_day(backend, day, _COLUMNS, page_size))
                 for day in data_days.days_with_data(backend, since.date(), until.date())]
    page = {}
    for done, (phase, rows) in enumerate(steps, 1):
        for row, cells in rows:
            if K.COL_SUBMITTED in cells and K.COL_OOID in cells:
                layout = _crash_row_layout(row, cells[K.COL_OOID])
                if layout == "ours":
                    page[row] = cells
                else:
                    counts[K.SUBMITTED_TIME][layout] += 1
            if len(page) >= page_size:
                yield _page_of(backend, page)
                page = {}
        progress(phase, done, len(steps))
    if page:
        yield _page_of(backend, page)


def _crash_row_layout(row, ooid):
    """``"ours"`` (``salt + YYMMDD + id``, or an ``ids:ooid`` that is no crash id: judged, and
    found unreadable, as a crash row), ``"foreign"`` (Socorro's pre-salt ``YYMMDD + id``) or
    ``"unreadable"`` (a key in no layout of its crash id) of a crash row."""
    crash_id = ooid.decode("ascii", "replace")
    if not K.is_crash_id(crash_id) or row == K.crash_row_key(crash_id):
        return "ours"
    return "foreign" if row == presalt_crash_row_key(crash_id) else "unreadable"


def _page_of(backend, page):
    return [(cells[K.COL_OOID].decode("ascii", "replace"), cells)
            for cells in _with_process_type(backend, page).values()]


def _check_crash_page(backend, page, counts, repair, heartbeat, span):
    """MISSING: the pointers a page of crash rows implies that no index holds (any key form).
    ``span``: ``[earliest, latest]`` submitted time of the crash rows read so far, widened."""
    expected = {table: {} for table in INDEX_TABLES}
    for crash_id, cells in page:
        try:
            for table, pointers in expected_pointers(crash_id, cells).items():
                expected[table].update(pointers)
        except _Unreadable:
            counts[K.SUBMITTED_TIME]["unreadable"] += 1
            continue
        submitted = stored_time(cells[K.COL_SUBMITTED])
        span[:] = [min(span[0] or submitted, submitted), max(span[1] or submitted, submitted)]
    if heartbeat:
        heartbeat()
    for table, want in expected.items():
        if not want:
            continue
        lookups = {}
        for row, column in want:
            forms = [row]
            if table in TIME_TABLES and not row.startswith(K.PRIORITY_PREFIX):
                forms = time_index_key_forms(*parse_stored_time_index_key(row))
            for form in forms:
                lookups.setdefault(form, []).append((row, column))
        present = backend.get_rows(table, list(lookups), columns=[b"ids"])
        missing = dict(want)
        for form, cells in present.items():
            for row, column in lookups[form]:
                if (row, column) in missing and cells.get(column) == missing[(row, column)].get(column):
                    del missing[(row, column)]
        counts[table]["missing"] += len(missing)
        if repair and missing:
            counts[table]["repaired_missing"] += _write_missing(backend, table, missing)


def _write_missing(backend, table, want):
    """Write the missing pointers their crash still implies (crash rows re-read first: a crash
    processed since the scan must not get its queue pointer back)."""
    ids = {puts.get(K.COL_OOID, b"") or next(iter(puts.values())) for puts in want.values()}
    still, _unreadable = _implied(backend, table, [i.decode("ascii", "replace") for i in ids
                                                   if K.is_crash_id(i.decode("ascii", "replace"))])
    mutations = {}
    for row, column in want:
        if (row, column) in still:
            mutations.setdefault(row, RowMutation(row)).puts.update(still[(row, column)])
    batch = list(mutations.values())
    for i in range(0, len(batch), 1000):
        backend.mutate_rows(table, batch[i:i + 1000])
    return sum(1 for key in want if key in still)


def _pointer_pages(backend, table, since, until, page_size=PAGE, span=(None, None)):
    """Pages of ``[(row, column, crash id, newest cell ts)]`` of ``table``'s pointers (with
    ``since``, the time-keyed ones from a day before ``since`` or the earliest time of ``span``
    to a day after ``until`` or its latest: a day's margin also holds 19-character keys)."""
    if since is not None and table in TIME_TABLES:
        low, high = min(since, span[0] or since) - timedelta(days=1), max(until, span[1] or until) + timedelta(days=1)
        scans = [backend.scan(table, start=a, stop=b, columns=[b"ids"], include_timestamp=True,
                              page_size=page_size)
                 for a, b in (K.time_index_range(c, low, high) for c in K.SALTS)]
        if table == K.UNPROCESSED_FLAG:
            scans.append(backend.scan(table, prefix=K.PRIORITY_PREFIX, columns=[b"ids"], include_timestamp=True,
                                      page_size=page_size))
        if table == K.HANG_ID_SUBMITTED_TIME:  # Socorro's rows of hang ids not starting with a hex digit
            scans += [backend.scan(table, start=a, stop=b, columns=[b"ids"], include_timestamp=True,
                                   page_size=page_size) for a, b in _NOT_SALTED]
    else:
        scans = [backend.scan(table, columns=[b"ids"], include_timestamp=True, page_size=page_size)]
    page = []
    for scan in scans:
        for row, cells in scan:
            newest = max(ts for _v, ts in cells.values())
            for column, (value, _ts) in cells.items():
                if column == K.COL_OOID or (table in _HANG_COLUMN_TABLES and K.is_hang_column(column)):
                    page.append((row, column, value.decode("ascii", "replace"), newest))
            if len(page) >= page_size:
                yield page
                page = []
    if page:
        yield page


def _layout(table, row, column=K.COL_OOID):
    """``"ours"`` (with the key in our form), ``"foreign"`` (a layout of Socorro's) or
    ``"malformed"`` (no layout at all): which layout a pointer cell is in."""
    if table == K.HANG_ID_SUBMITTED_TIME and column != K.COL_OOID:
        return "foreign", row  # Socorro's: ``ids:ooid:<ProcessType>`` under hang_id[0] + ts + hang_id
    if table in TIME_TABLES:
        if row.startswith(K.PRIORITY_PREFIX):
            try:
                K.parse_priority_key(row)
                return "ours", row
            except InvalidArgument:
                return "malformed", row  # Socorro had no priority rows
        try:
            return "ours", canonical_time_index_key(row)
        except InvalidArgument:
            return "malformed", row  # Socorro's time keys in these tables are readable as ours
    if table == K.SIGNATURE_OOID:
        try:
            K.parse_signature_index_key(row)
            return "ours", row
        except InvalidArgument:
            try:
                parse_socorro_signature_key(row)
                return "foreign", row
            except InvalidArgument:
                return "malformed", row
    return "ours", row


def _check_pointer_page(backend, table, page, counts, repair, orphan_age_s, now_ms, drop_foreign, in_range):
    """VALID / ORPHAN / FOREIGN / UNREADABLE of a page of pointers; repair deletes what it may."""
    judged = [(row, column, cid, newest, *_layout(table, row, column))
              for row, column, cid, newest in page if in_range(cid)]
    crash_ids = {cid for _r, _c, cid, _n, _l, _o in judged if K.is_crash_id(cid)}
    implied, unreadable, processed = _implied(backend, table, crash_ids, with_processed=True)
    foreign = {cid for _r, _c, cid, _n, layout, _o in judged if layout == "foreign" and K.is_crash_id(cid)}
    existing = set(_read_crashes(backend, foreign)) if foreign else set()
    if table not in _QUEUE_TABLES:
        processed = set()
    deletes = []
    for row, column, cid, newest, layout, ours in judged:
        if layout == "foreign":
            if cid in existing:  # Socorro's readers use it: kept unless asked
                counts["foreign"] += 1
                if repair and drop_foreign:
                    deletes.append(RowMutation(row, delete_row=True))
                    counts["dropped_foreign"] += 1
                continue
            # a row of Socorro's naming a crash that is gone (deleted, expired): an orphan, and
            # one that names a crash, so --repair deletes it (a hang row: that side only)
            counts["orphan"] += 1
            if repair and now_ms - newest >= orphan_age_s * 1000:
                deletes.append(RowMutation(row, deletes=[column]) if table == K.HANG_ID_SUBMITTED_TIME else
                               RowMutation(row, delete_row=True))
                counts["deleted_orphans"] += 1
            continue
        if layout == "malformed":  # no crash implies it: an orphan, which readers skip
            counts["malformed"] += 1
        elif cid in unreadable:
            counts["unreadable"] += 1
            continue
        puts = implied.get((ours, column))
        if puts is not None and puts.get(column) == cid.encode("ascii"):
            counts["valid"] += 1
            continue
        counts["orphan"] += 1
        stale = cid in processed and not row.startswith(K.PRIORITY_PREFIX)  # no writer queues it again
        if repair and (stale or now_ms - newest >= orphan_age_s * 1000):
            deletes.append(RowMutation(row, deletes=[column]) if table == K.HANG_ID else
                           RowMutation(row, delete_row=True))
            counts["deleted_orphans"] += 1
    for i in range(0, len(deletes), 1000):
        backend.mutate_rows(table, deletes[i:i + 1000])


def _range_of(since, until):
    """``(first day, end day)`` (UTC midnights, end exclusive) of ``since``/``until``, or Nones.

    ``until`` defaults to today (included); a time of day rounds up to the next midnight.
    """
    if since is None and until is None:
        return None, None
    if since is None:
        raise InvalidArgument("until needs since")
    start = K.parse_timestamp(since, "since").replace(hour=0, minute=0, second=0, microsecond=0)
    end = K.parse_timestamp(until, "until") if until is not None else datetime.now(timezone.utc)
    midnight = end.replace(hour=0, minute=0, second=0, microsecond=0)
    end = midnight if end == midnight and until is not None else midnight + timedelta(days=1)
    if end <= start:
        raise InvalidArgument(f"until ({until}) must be after since ({since})")
    return start, end


def verify_indexes(backend, repair=False, orphan_age_s=DEFAULT_ORPHAN_AGE_S, heartbeat=None, now_ms=None,
                   since=None, until=None, drop_foreign=False, page_size=PAGE, progress=None):
    """Count VALID / MISSING / ORPHAN / FOREIGN / UNREADABLE pointers per index table; with
    ``repair``, fix them (see the module docstring).

    ``progress(phase, done, total)``, if given, is called as the check goes: phase ``days`` (crash
    rows read, a day at a time, with ``since``) or ``crash rows`` (one step without), then
    ``indexes`` (index tables checked, of 7).

    Returns ``{table: {"valid", "missing", "orphan", "foreign", "unreadable", "repaired_missing",
    "deleted_orphans", "dropped_foreign"}}``.
    """
    if not is_number(orphan_age_s) or orphan_age_s < 0:
        raise InvalidArgument(f"orphan_age_s must be a number >= 0: {orphan_age_s!r}")
    if not isinstance(page_size, int) or page_size < 1:
        raise InvalidArgument(f"page_size must be an int >= 1: {page_size!r}")
    start, end = _range_of(since, until)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    # the signature and legacy time pointers of a cut-over store are derived: those waiting for
    # the deriver are not missing
    counter_deriver.catch_up(backend)
    counts = {table: dict.fromkeys(COUNTS, 0) for table in INDEX_TABLES}
    report = progress or (lambda phase, done, total: None)
    span = [None, None]  # submitted times of the crash rows read: where their pointers are
    for page in _crash_pages(backend, start, end, counts, page_size, report):
        _check_crash_page(backend, page, counts, repair, heartbeat, span)

    def in_range(crash_id):
        if start is None:
            return True
        try:
            day = K.crash_date(crash_id)
        except ValueError:
            return False
        return start.date() <= day < end.date()

    for index, table in enumerate(INDEX_TABLES):
        for page in _pointer_pages(backend, table, start, end, page_size, span):
            _check_pointer_page(backend, table, page, counts[table], repair, orphan_age_s, now_ms,
                                drop_foreign, in_range)
            if heartbeat:
                heartbeat()
        report("indexes", index + 1, len(INDEX_TABLES))
    return counts


def problems_left(report, repair=False):
    """How many problems a :func:`verify_indexes` report leaves to fix (``verify-indexes`` exits
    1 when there are any).  A check: every MISSING, ORPHAN (MALFORMED included) and UNREADABLE
    pointer.  A repair: what it could not fix: MISSING pointers it did not write, ORPHANs it kept
    (too young to be known stale) and UNREADABLE crash rows.  FOREIGN is never a problem."""
    if not repair:
        return sum(t["missing"] + t["orphan"] + t["unreadable"] for t in report.values())
    return sum(max(0, t["missing"] - t["repaired_missing"]) + (t["orphan"] - t["deleted_orphans"]) + t["unreadable"]
               for t in report.values())


def run_verify_indexes(backend, repair=False, orphan_age_s=DEFAULT_ORPHAN_AGE_S, since=None, until=None,
                       drop_foreign=False, progress=None, **job_options):
    """Run :func:`verify_indexes` as job ``verify-indexes`` (one live run, recorded);
    ``progress(phase, done, total)`` as for :func:`verify_indexes` (the shape of rollup's)."""
    if not is_number(orphan_age_s) or orphan_age_s < 0:
        raise InvalidArgument(f"orphan_age_s must be a number >= 0: {orphan_age_s!r}")
    _range_of(since, until)

    def body(ctx):
        ctx.set_phase("repair" if repair else "verify")
        report = verify_indexes(backend, repair, orphan_age_s, heartbeat=ctx.heartbeat, since=since,
                                until=until, drop_foreign=drop_foreign, progress=ctx.report)
        ctx.add_counts(**{k: sum(t[k] for t in report.values()) for k in ("valid", "missing", "orphan", "foreign")})
        return report

    params = {"repair": repair, "since": str(since) if since else None, "until": str(until) if until else None,
              "drop_foreign": drop_foreign}
    locks = (runs.INDEXES_LEASE,) if repair else ()  # a check only reads
    run = runs.run_job(backend, "verify-indexes", body, params=params, resume=False, locks=locks,
                       progress=progress, **job_options)
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

    On a cut-over store the deriver owns these counters: they are set again by the deriver, from
    the crashes it counted as waiting (:func:`~socorro_store.crashstore.counter_deriver.rederive_queues`).
    """
    if cut_over.enabled(backend):
        return counter_deriver.rederive_queues(backend)
    live = counters.read_counters(backend, K.METRICS, K.QUEUE_ROW)
    before = counters.queue_sizes(backend)
    actual = count_queues(backend)
    suffix = counters.QUEUE_SUFFIXES
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
                       locks=(runs.COUNTERS_LEASE, runs.INDEXES_LEASE), **job_options)
    return run.result
