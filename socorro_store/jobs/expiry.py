"""Expiry of old counter detail, with configurable retention (``socorro-store expire``).

Default retention (:class:`Retention`), counted back from the current interval:

* ``crash_report_signatures`` columns, as the wiki planned: current + 48 ``hourly_``, + 30
  ``daily_``, + 2 ``monthly_``, + 2 ``yearly_``;
* ``metrics`` minute rows: 7 days (enough to look at a spike a week later); hour rows: 90 days.
  Day, month and year rows are kept forever (one row a day is ~365 rows a year).
* the queue's claim rows (``~claims/<minute>``): the ``done`` histories of processed crashes, 2
  days after their minute (a history only matters to a scan older than the save, seconds old).
  Histories of crashes still queued stay, whatever their age: their leases and failed attempts.

Memory: deletes go out in batches of 1000 as the scans go; what is held is one batch and one
entry per coarser interval (the marks read, the intervals whose markers go).

Expiry deletes only what a coarser level already holds, i.e. only once the roll-up has marked
the coarser interval (``timestamps:rolled_up``): a minute row needs its hour row marked, an hour
row and ``hourly_`` columns their day row, ``daily_`` columns their month row, ``monthly_`` columns
their year row, and ``yearly_`` columns their own year row (the metrics year row keeps the year's
totals).  Unmarked detail stays until a roll-up has covered it.  When ``daily_`` (``monthly_``)
columns of a month (year) are deleted, the metrics row of that month (year) gets
``timestamps:expired_signature_days`` (``…_months``) so a later roll-up of it recounts from the
crash rows instead of summing columns that are gone.  Dimensioned signature columns
(``daily_…|p=Firefox``) expire with their plain column; the cardinality registry rows
(``~dimensions/…`` in ``crash_report_signatures_seen``) are kept; a day's rankings (``~rank/<day>…``)
go with its daily signature columns.  The first-seen markers of an interval
(``crash_report_signatures_seen``) go with its signature columns.  The intervals whose columns
go are recorded before the columns go (:data:`~socorro_store.schema.keys.EXPIRING_ROW`), and
their markers and rankings are deleted from that record: a run killed between the two leaves
them to the next run.  A minute row goes when its hour row or its day row is marked (an hour
row can go before its minutes when a run is killed).

A run records the moment it counted back from with its retention (its job record's ``params``,
:mod:`~socorro_store.jobs.detail_retention`): a roll-up of a cut-over store then tells detail
deleted here from a count lost.
"""

from datetime import datetime, timedelta, timezone

from ..backends.base import RowMutation
from ..errors import InvalidArgument
from ..crashstore.claims import decode_claims, lease_of
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema import ranking_keys as RK
from ..schema.queue_keys import CLAIMS_PREFIX, parse_claim_row_key
from . import runs
from .detail_retention import Retention, run_params
from .rollup import COL_ROLLED_UP, COL_SIG_DAYS_EXPIRED, COL_SIG_MONTHS_EXPIRED, WHOLE_SIGNATURE_ROWS


class _Marks:
    """Which metrics rows the roll-up marked, read in batches and cached."""

    def __init__(self, backend):
        self.backend, self.cache = backend, {}

    def load(self, rows):
        todo = [r for r in set(rows) if r not in self.cache]
        if todo:
            found = self.backend.get_rows(K.METRICS, todo, columns=[COL_ROLLED_UP])
            for row in todo:
                self.cache[row] = row in found
        return self

    def __call__(self, row):
        return self.load([row]).cache[row]


_BATCH = 1000


def _flag_then_delete(backend, expired_flags, deletes, intervals=()):
    """Flag first: a roll-up must never sum signature columns that are about to go, and a run
    killed after the deletes must leave the intervals to clean (:data:`K.EXPIRING_ROW`)."""
    if intervals:
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(K.EXPIRING_ROW, {
            K.expiring_column(row): b"1" for row in intervals})])
    if expired_flags:
        backend.mutate_rows(K.METRICS, [RowMutation(r, {c: b"1"}) for r, c in expired_flags.items()])
    if deletes:
        backend.mutate_rows(K.SIGNATURES, deletes)


def _clean_expired_intervals(backend, report):
    """Delete the first-seen markers of every interval recorded as expiring (by this run or a
    killed one), and a day's ranking rows with their head, top and slack rows; then forget the
    interval."""
    recorded = backend.get_row(K.SIGNATURES_SEEN, K.EXPIRING_ROW)
    intervals = []
    for column in recorded:
        try:
            intervals.append(K.parse_expiring_column(column))
        except InvalidArgument:
            continue
    intervals.sort()
    for i in range(0, len(intervals), _BATCH):
        chunk = intervals[i:i + _BATCH]
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(r, delete_row=True) for r in chunk])
        for interval in chunk:
            level, start = K.parse_metrics_row(interval)
            if level == "day":  # the day's ranking is the sum of its daily signature columns
                day = start.date()
                rows = [row for first in (RK.rank_row(day), RK.top_row(day), RK.top_row(day, head=True),
                                          RK.slack_row(day))
                        for row, _cells in backend.scan(K.SIGNATURES_SEEN, start=first,
                                                        stop=first + DK.SEPARATOR + b"\xff", page_size=4)]
                if rows:
                    backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(r, delete_row=True) for r in rows])
                report["ranking_rows"] += len(rows)
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(K.EXPIRING_ROW, deletes=[
            K.expiring_column(r) for r in chunk])])
    report["first_seen_rows"] = len(intervals)


def expire(backend, retention=None, now=None, heartbeat=None):
    """Delete detail older than ``retention`` that a marked coarser interval holds; return counts."""
    retention = retention if retention is not None else Retention()
    if not isinstance(retention, Retention):
        raise InvalidArgument("retention must be a Retention")
    now = K.parse_timestamp(now, "now") if now is not None else datetime.now(timezone.utc)
    cuts = retention.cuts(now)
    minute_limit, hour_limit = cuts["minute"], cuts["hour"]
    marks = _Marks(backend)
    report = {"metrics_minute_rows": 0, "metrics_hour_rows": 0, "signature_columns": 0, "first_seen_rows": 0,
              "ranking_rows": 0,
              "kept_unmarked": 0, "claim_histories": 0}
    # metrics: every row before the minute limit (minute rows older than it are being deleted)
    deletes = []
    stop = K.metrics_row(minute_limit, "minute")
    for row, _cells in backend.scan(K.METRICS, start=b"0", stop=stop, columns=[b"counters", b"timestamps"]):
        try:
            level, start = K.parse_metrics_row(row)
        except InvalidArgument:
            continue
        if level == "minute" and start < minute_limit:
            # its hour row holds it; a marked day holds its hours, and its hour row may be gone
            # before the minute (expired, or deleted by a run killed before the minute)
            coarse, counter = (K.metrics_row(start, "hour"), K.metrics_row(start, "day")), "metrics_minute_rows"
        elif level == "hour" and start < hour_limit:
            coarse, counter = (K.metrics_row(start, "day"),), "metrics_hour_rows"
        else:
            continue
        if any(marks(row) for row in coarse):
            deletes.append(RowMutation(row, delete_row=True))
            report[counter] += 1
        else:
            report["kept_unmarked"] += 1
        if len(deletes) >= _BATCH:  # rows behind the scan: deleting them does not disturb it
            backend.mutate_rows(K.METRICS, deletes)
            deletes = []
        if heartbeat:
            heartbeat()
    if deletes:
        backend.mutate_rows(K.METRICS, deletes)
    # signature columns
    limits = {level: (cuts["signature_" + level], coarse)
              for level, coarse in (("hour", "day"), ("day", "month"), ("month", "year"), ("year", "year"))}
    deletes, expired_flags, intervals, recorded = [], {}, set(), set()
    # pages of 1,000 whole rows held 300 MB at 1 M crashes on HBase
    for row, cells in backend.scan(K.SIGNATURES, columns=[K.FAMILY_COUNTERS], page_size=WHOLE_SIGNATURE_ROWS):
        columns = []
        for column in cells:
            try:  # plain and dimensioned (``…|key``) columns expire alike
                level, start, _key = DK.parse_signature_column(column)
            except InvalidArgument:
                continue
            limit, coarse_level = limits[level]
            if start >= limit:
                continue
            coarse = K.metrics_row(start, coarse_level)
            if marks(coarse):
                columns.append(column)
                intervals.add(K.metrics_row(start, level))
                if level in ("day", "month"):
                    expired_flags[coarse] = COL_SIG_DAYS_EXPIRED if level == "day" else COL_SIG_MONTHS_EXPIRED
            else:
                report["kept_unmarked"] += 1
        if columns:
            deletes.append(RowMutation(row, deletes=columns))
            report["signature_columns"] += len(columns)
        if len(deletes) >= _BATCH:
            _flag_then_delete(backend, expired_flags, deletes, intervals - recorded)
            recorded |= intervals
            deletes = []
        if heartbeat:
            heartbeat()
    _flag_then_delete(backend, expired_flags, deletes, intervals - recorded)
    # the first-seen markers and rankings of the intervals whose signature columns went, by this
    # run or by one killed before it cleaned them
    _clean_expired_intervals(backend, report)
    claim_limit = now.replace(second=0, microsecond=0) - timedelta(days=retention.claim_days)
    report["claim_histories"] = expire_claim_histories(backend, claim_limit, heartbeat)
    return report


def expire_claim_histories(backend, before, heartbeat=None):
    """Delete the ``done`` claim histories in claim rows of minutes before ``before``; return how
    many.  One claim row (a minute's crashes) at a time."""
    deleted, deletes = 0, []
    for prefix in (b"", K.PRIORITY_PREFIX):
        start = CLAIMS_PREFIX + prefix
        stop = start + K.format_timestamp(before)[:16]
        for row, cells in backend.scan(K.UNPROCESSED_FLAG, start=start, stop=stop, columns=[K.FAMILY_PROCESSOR_STATE]):
            try:
                row_prefix, _minute = parse_claim_row_key(row)
            except InvalidArgument:
                continue
            if row_prefix != prefix:
                continue  # a priority claim row met by the standard rows' scan
            done = [column for column, value in cells.items() if lease_of(decode_claims(value)).done]
            if done:  # column deletes only: a whole-row delete could mask a claim appended meanwhile
                deletes.append(RowMutation(row, deletes=done))
                deleted += len(done)
            if len(deletes) >= _BATCH:
                backend.mutate_rows(K.UNPROCESSED_FLAG, deletes)
                deletes = []
            if heartbeat:
                heartbeat()
    if deletes:
        backend.mutate_rows(K.UNPROCESSED_FLAG, deletes)
    return deleted


def run_expire(backend, retention=None, now=None, **job_options):
    """Run :func:`expire` as job ``expire`` (one live run, recorded)."""
    retention = retention if retention is not None else Retention()
    if not isinstance(retention, Retention):
        raise InvalidArgument("retention must be a Retention")

    now = K.parse_timestamp(now, "now") if now is not None else datetime.now(timezone.utc)

    def body(ctx):
        ctx.set_phase("expire")
        return expire(backend, retention, now, heartbeat=ctx.heartbeat)

    # the run's now goes with its retention: a later roll-up works out where this run cut
    return runs.run_job(backend, "expire", body, params=run_params(retention, now), resume=False,
                        locks=(runs.COUNTERS_LEASE,), **job_options).result
