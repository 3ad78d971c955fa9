"""Crash retention (``socorro-store expire-crashes --before DATE``): delete old crashes, keep counts.

Every crash *submitted* before ``before`` (a date, UTC midnight) goes completely, as a privacy
deletion takes it (:mod:`socorro_store.crashstore.deletion`): its crash row, its pointers in the
seven index tables (submitted_time, unprocessed_flag, legacy_unprocessed_flag,
legacy_submitted_time, hang_id, hang_id_submitted_time, signature_ooid), its queue claims and
dead-letter record.  The counters stay: they are aggregates naming no crash.

Counts stay exact: before deleting anything, the job records ``before`` in the ``metrics`` row
``crash_retention`` (``timestamps:crashes_expired_before``, only ever moved later).  The roll-up
never recomputes a day before it, nor recounts an expired month or year before it from crash
rows, so the expired crashes stay counted.  Run ``rollup`` before ``expire-crashes`` so that the
counters being frozen are exact.

The day volume rows the dimension admission reads (``~dimensions/volume/<day>``,
:mod:`~socorro_store.jobs.registry`) go once no roll-up can read them: those of the days before
``before`` less the admission window (30 days).

Which rows: the crash rows of every day (crash-id date) up to and including ``before``'s day that
holds data (:func:`~socorro_store.jobs.data_days.days_with_data`), read by day prefix in both
layouts (ours and Socorro's pre-salt one) with two small columns (``timestamps:submitted``,
``ids:ooid``); a crash goes when its submitted time is before ``before``.
A crash id's date need not be its submission's (a client names its crash, a collector stamps
it): a last phase reads the ``submitted_time`` index up to ``before`` (both key layouts,
:func:`~socorro_store.crashstore.listings.crashes_submitted`), so a crash submitted before it
whose id is dated after goes too.

A job like the others: one live run (the ``counters`` lease, shared with rollup and expire, and
the ``indexes`` lease, shared with verify-indexes), a checkpoint after each day (a rerun resumes
at the next day), a run record, progress per day.  Memory: one page of crash ids (``page_size``)
and the list of days.  ``dry_run``: count only, delete and record nothing.
"""

from datetime import date, datetime, time, timedelta, timezone

from ..backends.base import RowMutation
from ..checks import is_int
from ..crashstore import deletion, listings
from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema.stored import crash_id_of_row, stored_time
from . import data_days, registry, runs
from .rollup import COL_EXPIRED_BEFORE, EPOCH, RETENTION_ROW, crashes_expired_before

JOB = "expire-crashes"
PAGE = 500
UTC = timezone.utc


def parse_before(before, now=None):
    """``before`` (``YYYY-MM-DD`` or a date) as UTC midnight; InvalidArgument for a bad date or
    one after today (nothing submitted then could be expired, so it is a typo)."""
    if isinstance(before, datetime):
        raise InvalidArgument("before must be a date (YYYY-MM-DD), not a time")
    if isinstance(before, str):
        try:
            before = date.fromisoformat(before)
        except ValueError:
            raise InvalidArgument(f"before must be a date YYYY-MM-DD: {before!r}") from None
    if not isinstance(before, date):
        raise InvalidArgument(f"before must be a date YYYY-MM-DD: {before!r}")
    now = K.parse_timestamp(now, "now") if now is not None else datetime.now(UTC)
    if before > now.date():
        raise InvalidArgument(f"before {before.isoformat()} is in the future")
    return datetime.combine(before, time(), UTC)


def _old_crashes(backend, day, before, page_size, on_page):
    """Pages of crash ids of ``day`` (crash-id date) submitted before ``before``, from its crash
    rows in either layout (ours, Socorro's pre-salt one: :func:`.data_days.crash_rows_of_day`)."""
    page = []
    for row, cells in data_days.crash_rows_of_day(backend, day, [K.COL_SUBMITTED], page_size):
        try:
            submitted, crash_id = stored_time(cells[K.COL_SUBMITTED]), crash_id_of_row(row)
        except (KeyError, InvalidArgument):
            continue  # no crash yet (a save in flight) or unreadable: not known to be old
        if submitted < before:
            page.append(crash_id)
            if len(page) >= page_size:
                yield page
                page = []
                on_page()
    if page:
        yield page


def _expire_page(backend, page, report, dry_run, on_deleted):
    report["crashes"] += len(page)
    if not dry_run:
        report["deleted"] += len(deletion.delete_crashes(backend, page, missing_ok=True, on_deleted=on_deleted))


def _pages(items, size):
    page = []
    for item in items:
        page.append(item)
        if len(page) >= size:
            yield page
            page = []
    if page:
        yield page


def expire_crashes(ctx, backend, before, dry_run=False, page_size=PAGE, on_deleted=None):
    """The job body (see :func:`run_expire_crashes`)."""
    checkpoint = ctx.checkpoint
    if checkpoint:
        days, next_index, report = checkpoint["days"], checkpoint["next"], checkpoint["report"]
    else:
        ctx.set_phase("plan")
        last = (before + timedelta(days=1)).date()  # crash ids dated ``before`` may be older
        days = [d.strftime("%Y-%m-%d") for d in data_days.days_with_data(backend, EPOCH, last)]
        next_index = 0
        report = {"before": before.date().isoformat(), "dry_run": dry_run, "days": len(days),
                  "crashes": 0, "deleted": 0}
        if not dry_run:  # freeze the counters first: no rollup may recount these days any more
            frozen = crashes_expired_before(backend)
            if frozen is None or frozen < before:
                backend.mutate_rows(K.METRICS, [RowMutation(RETENTION_ROW, {
                    COL_EXPIRED_BEFORE: before.strftime("%Y-%m-%dT%H:%M:%SZ").encode("ascii")})])
        ctx.save({"days": days, "next": 0, "report": report}, phase="days")
    for index in range(next_index, len(days)):
        day = K.parse_timestamp(days[index])
        for page in _old_crashes(backend, day, before, page_size, ctx.heartbeat):
            _expire_page(backend, page, report, dry_run, on_deleted)
            ctx.heartbeat()
        ctx.report("days", index + 1, len(days))
        ctx.save({"days": days, "next": index + 1, "report": report}, phase="days")
    # crashes submitted before ``before`` under an id dated after the days above (those dated
    # within them were handled there: deleted, or counted in a dry run)
    scanned_to = (before + timedelta(days=1)).date()  # the days above: crash-id dates before it
    late = (cid for cid in listings.crashes_submitted(backend, datetime.combine(EPOCH, time(), UTC), before, page_size)
            if K.crash_date(cid) >= scanned_to)
    for page in _pages(late, page_size):
        _expire_page(backend, page, report, dry_run, on_deleted)
        ctx.heartbeat()
    report["volume_rows"] = _expire_volume_rows(backend, before, dry_run)
    ctx.add_counts(crashes=report["crashes"], deleted=report["deleted"])
    return report


def _expire_volume_rows(backend, before, dry_run):
    """Delete the day volume rows no roll-up can read any more; return how many (found, in a dry
    run).  A day before ``before`` is never recounted, and the admission of a day from it on
    reads the volumes of the :data:`~.registry.WINDOW_DAYS` days ending with it: the rows of the
    days before ``before`` less that window are dead."""
    cut = before.date() - timedelta(days=registry.WINDOW_DAYS - 1)
    rows = [row for row, _cells in backend.scan(K.SIGNATURES_SEEN, start=DK.VOLUME_PREFIX, stop=DK.volume_row(cut),
                                                columns=[b"seen"], page_size=PAGE)]
    for i in range(0, len(rows) if not dry_run else 0, PAGE):
        backend.mutate_rows(K.SIGNATURES_SEEN, [RowMutation(row, delete_row=True) for row in rows[i:i + PAGE]])
    return len(rows)


def run_expire_crashes(backend, before, dry_run=False, now=None, page_size=PAGE, progress=None, on_deleted=None,
                       **job_options):
    """Delete every crash submitted before ``before`` (``YYYY-MM-DD``), keeping its counts.

    Returns ``{"before", "dry_run", "days", "crashes" (found), "deleted", "volume_rows" (day
    volume rows deleted, or found in a dry run), "run_id"}``.
    InvalidArgument for a bad or future date; :class:`~socorro_store.jobs.runs.JobLeaseHeld`
    while a rollup, expire, reconcile-queue or verify-indexes run holds a shared lease.
    ``on_deleted(crash_ids)``: called after each page is deleted (a store's search:
    ``store.search.crashes_deleted`` removes them from its index).
    """
    moment = parse_before(before, now)
    if not isinstance(dry_run, bool):
        raise InvalidArgument(f"dry_run must be a bool: {dry_run!r}")
    if not is_int(page_size) or page_size < 1:
        raise InvalidArgument(f"page_size must be an int >= 1: {page_size!r}")
    run = runs.run_job(backend, JOB, lambda ctx: expire_crashes(ctx, backend, moment, dry_run, page_size, on_deleted),
                       params={"before": moment.date().isoformat(), "dry_run": dry_run}, progress=progress,
                       resume=not dry_run, locks=(runs.COUNTERS_LEASE, runs.INDEXES_LEASE), **job_options)
    return {**run.result, "run_id": run.run_id}
