"""Roll-up: exact counters for closed intervals, recomputed from the crash rows, as puts.

Live counters (:mod:`socorro_store.crashstore.counters`) are fast but may drift: increments are never
retried, a process can die between writes, a reprocessed crash can count twice.  The roll-up makes
them exact for every *closed* interval (one whose end is at or before the cutoff,
``min(until, now - grace)``, floored to the minute).

Source of truth: the crash rows, reached through the ``submitted_time`` index and cross-checked
against the day's crash rows (:mod:`socorro_store.jobs.recount`: small columns only, one page and
one day of per-minute counts held at a time).  Data written by Socorro's own code is read in its
formats (:mod:`socorro_store.schema.stored`).  For each crash, with its submitted time ``T``:

* ``submitted_crash_reports``, ``…_legacy_throttle_N``, ``submitted_oop_<ProcessType>_crash_reports``
  and, if processed with ``##null##`` signature or ``success`` False, ``crash_report_processing_errors``
  count at the minute of ``T``;
* a hang pair counts once, at the minute of the later-submitted side, when the hang-id row lists
  two or more sides whose crash rows exist;
* a processed crash counts in its signature's ``hourly_``/``daily_`` columns;
* ``unique_crash_signatures`` = distinct signatures of processed crashes in the hour and the day.

Coarser levels come from the level below: hours sum minutes, days sum hours, months sum day rows
and ``daily_`` columns, years sum month rows and ``monthly_`` columns; a month's (year's) unique
count is the number of signatures whose ``monthly_`` (``yearly_``) value is positive.  When the
finer signature columns were already expired, the month (year) is recounted from the crash rows.

Nothing is destroyed that cannot be accounted for: an interval holding a crash row the recount
could not count (no index pointer, an unreadable cell) is left alone, with every coarser interval
containing it (its minute, hour and day rows and signature columns; an expired month's or year's
recount leaves the whole month or year).  The report says how many (``kept_intervals``,
``kept_examples``) and which rows could not be read (``unreadable_rows``, ``unreadable_examples``);
such an interval gets no ``rolled_up`` mark, so expiry keeps its detail too.

Writes: every exact value is compared with the live cell; only differing cells are written (puts)
and derived counters with no recount are deleted, so a rerun writes no counter and each counter
key is written at most once per run.  Each difference is drift: counted and reported.  Counters
not derived from crashes (``<product>_active_installations``) are left alone.

Marks (``metrics`` family ``timestamps``): ``timestamps:rolled_up`` (UTC time of the run) on every
rolled-up hour, day, month and year row (a minute row is covered by its hour's mark), and on day,
month and year rows ``timestamps:rollup_digest``, a hash of their derived counters as written.

Which days are recomputed: only days that hold crashes or counters, found by one-row scans that
skip from one such day to the next (:mod:`~socorro_store.jobs.data_days`), so a run costs what
the data holds, not the calendar span; from the earliest on the first run; afterwards the days since the
previous successful run's cutoff minus ``lookback_days`` (late crashes, processing lag), plus every
older day whose live counters no longer match its digest (a late crash or a drifted counter
changed it since).  ``since`` forces a full recompute from a date.  A late crash whose increment
was lost and that lands more than ``lookback_days`` late is counted by a run with ``since``.

Race: an increment landing between the recount of a closed interval and its put is overwritten.
Submit counters are keyed by submitted time, so that needs a crash submitted before the cutoff to
arrive during the run (a spooling collector); but signature, processing-error and unique counters
are incremented at *processing* time and keyed by submitted time, so any processing backlog older
than the grace period can hit it.  The next run, within ``lookback_days``, recounts the interval
and corrects it; choose ``grace`` longer than the usual processing lag.
"""

import collections
import hashlib
from datetime import date, datetime, timedelta, timezone

from ..checks import is_int, is_number
from ..crashstore import counter_deriver, counters, cut_over
from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..crashstore import rankings
from . import data_days, detail_retention, ranking, recount, registry, runs
from .corrections import (COL_DIGEST, COL_ROLLED_UP, COL_SIG_DAYS_EXPIRED, COL_SIG_MONTHS_EXPIRED,  # noqa: F401
                          Corrector, is_derived)  # the marks, re-exported
from ..engine.spilled_counts import SpilledCounts

JOB = "rollup"
DEFAULT_GRACE_S = 3600
DEFAULT_LOOKBACK_DAYS = 2
_SCAN_DAYS = 31  # days whose signature columns one scan of crash_report_signatures finds
#: signature rows read whole per call (a month's scan page, a day's reads on a store not cut over,
#: expire's scan): a busy row holds every interval's dimensioned cells, ~128,000 at 1 M crashes
WHOLE_SIGNATURE_ROWS = 100
_SIG_PAGE = WHOLE_SIGNATURE_ROWS
#: metrics row and cell where ``expire-crashes`` records the date before which crash rows are gone
RETENTION_ROW = b"crash_retention"
COL_EXPIRED_BEFORE = b"timestamps:crashes_expired_before"
UTC = timezone.utc
EPOCH = date(2000, 1, 1)  # crash ids hold YYMMDD of 20YY: no crash (or its counters) is older


def crashes_expired_before(backend):
    """The day (UTC datetime) before which ``expire-crashes`` deleted the crash rows, or None.

    Intervals before it are frozen: their counters count crashes that are gone, so the roll-up
    never recomputes them (it would take the expired crashes out)."""
    value = backend.get_row(K.METRICS, RETENTION_ROW, columns=[COL_EXPIRED_BEFORE]).get(COL_EXPIRED_BEFORE)
    return K.parse_timestamp(value.decode("ascii")) if value else None


def cutoff_of(until=None, grace_s=DEFAULT_GRACE_S, now=None):
    """End of the closed intervals: ``min(until, now - grace)``, floored to the minute."""
    if not is_number(grace_s) or grace_s < 0:
        raise InvalidArgument(f"grace must be a number of seconds >= 0: {grace_s!r}")
    now = K.parse_timestamp(now, "now") if now is not None else datetime.now(UTC)
    cutoff = now - timedelta(seconds=grace_s)
    if until is not None:
        cutoff = min(cutoff, K.parse_timestamp(until, "until"))
    return cutoff.replace(second=0, microsecond=0)


def _day(moment):
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _from_iso(text):
    return K.parse_timestamp(text)

def _decode_cells(cells):
    """``{column: int}`` of the 8-byte counter cells of a ``counters`` family."""
    return {c: K.decode_counter(v) for c, v in cells.items()
            if c.startswith(K.FAMILY_COUNTERS + b":") and len(v) == 8}


def _derived_column(column):
    return is_derived(column.split(b":", 1)[1].decode("utf-8", "replace"))


def digest(cells):
    """Hash of a metrics row's derived counters (what the roll-up wrote)."""
    items = sorted((c, v) for c, v in _decode_cells(cells).items() if _derived_column(c) and v)
    return hashlib.sha1(repr(items).encode()).digest()[:8]


def _named(counts):
    return {DK.metrics_name_column(name): n for name, n in counts.items() if n}


def _minutes_of(start, end):
    out, moment = [], start
    while moment < end:
        out.append(moment)
        moment += timedelta(minutes=1)
    return out


def _signature_columns(day, cutoff):
    """The signature columns of ``day`` that are closed at ``cutoff``: its hours and the day."""
    end = min(day + timedelta(days=1), cutoff)
    columns = [K.signature_counter_column("hour", K.metrics_row(day + timedelta(hours=h), "hour"))
               for h in range(24) if day + timedelta(hours=h + 1) <= end]
    if day + timedelta(days=1) <= cutoff:
        columns.append(K.signature_counter_columns(day)["day"])
    return columns


def record_live_signature_rows(backend, days, cutoff, signature_counts):
    """Record in ``signature_counts`` the rows holding a closed signature column of each of
    ``days`` (one scan, written as it goes: nothing per row is held).

    A scan filtered by columns still reads the whole table server-side, so the roll-up makes one
    per ``_SCAN_DAYS`` days, not one per day, and then reads only these rows.
    """
    owner = {column: day.strftime("%Y-%m-%d") for day in days for column in _signature_columns(day, cutoff)}
    if not owner:
        return
    batch = []
    for row, cells in backend.scan(K.SIGNATURES, columns=list(owner), page_size=1000):
        batch += [(owner[column], row) for column in cells if column in owner]
        if len(batch) >= 1000:
            signature_counts.add_live(batch)
            batch = []
    signature_counts.add_live(batch)


def rollup_day(backend, day, cutoff, corrector, stamp, signature_counts, admissions, on_page=None,
               page_size=recount.PAGE):
    """Make the minute, hour and day counters of ``day`` exact up to ``cutoff``.

    ``signature_counts``: the run's :class:`~socorro_store.engine.spilled_counts.SpilledCounts`, whose live rows
    of ``day`` were recorded by :func:`record_live_signature_rows`; its counts are replaced by
    the day's.  ``admissions``: the run's :class:`~.registry.Admissions`, which records the day's
    volumes and decides which dimension values count under their own name.  Memory: a chunk of
    signatures and an hour of minutes at a time (the corrector is flushed after each).
    """
    end = min(day + timedelta(days=1), cutoff)
    if end <= day:
        return
    signature_counts.clear()
    day_closed = day + timedelta(days=1) <= cutoff
    if day_closed:  # what is derived by now is in the slack read here (see fix_day_rankings)
        counter_deriver.catch_up(backend)
    slack = ranking.read_day_slack(backend, day.date()) if day_closed else None
    tally = recount.count_day(backend, day, end, on_page, page_size=page_size, signature_counts=signature_counts)
    corrector.report["crashes_read"] += tally.crashes
    admission = admissions.after_recount(day.date(), signature_counts)
    # on a cut-over store the counters are the deriver's: it derives the day again, under the
    # day's admission (one writer, one way of counting)
    rederived = counter_deriver.rederive_day(backend, day.date(), admission.admitted)
    corrector.report["rederived"] = corrector.report.get("rederived", 0) + rederived["read"]
    kept = recount.kept_rows(tally, day, end)
    _report_kept(corrector.report, tally, kept)
    hours = [day + timedelta(hours=h) for h in range(24) if day + timedelta(hours=h + 1) <= end]
    unique = signature_counts.unique_by_interval()
    day_row = K.metrics_row(day, "day")
    day_total = collections.Counter()
    # hour by hour: its minutes, then the hour (the minutes of an open hour at the cutoff too)
    for hour in hours + ([end.replace(minute=0)] if end.minute else []):
        exact = {}
        total = collections.Counter()
        counted = signature_counts.minutes_of(K.metrics_row(hour, "minute"),
                                              K.metrics_row(hour + timedelta(hours=1), "minute"))
        for moment in _minutes_of(hour, min(hour + timedelta(hours=1), end)):
            row = K.metrics_row(moment, "minute")
            exact[row] = collections.Counter()
            for name, n in counted.get(row, {}).items():
                exact[row][admission.map_name(name)] += n
            total.update(exact[row])
        if hour + timedelta(hours=1) <= end:
            total[counters.UNIQUE_SIGNATURES] = unique.get(K.metrics_row(hour, "hour"), 0)
            exact[K.metrics_row(hour, "hour")] = total
            day_total.update(total)
        _fix_metrics(backend, corrector, exact, kept, stamp)
    if day_closed:
        day_total[counters.UNIQUE_SIGNATURES] = signature_counts.unique()
        _fix_metrics(backend, corrector, {day_row: day_total}, kept, stamp, day_row=day_row)
    # signature columns of the closed hours (and the day when closed)
    wanted = [c for c in _signature_columns(day, cutoff)
              if c.split(b"_", 1)[1] not in kept]  # hourly_<hour row>, daily_<day row>
    if wanted:
        day_column = K.signature_counter_columns(day)["day"] if day_closed else None
        _fix_day_signatures(backend, corrector, signature_counts, day.strftime("%Y-%m-%d"), set(wanted), day_column,
                            admission)
        if day_column in wanted:
            ranking.fix_day_rankings(backend, corrector, signature_counts, day.date(), admission, slack)
    signature_counts.drop_live(day.strftime("%Y-%m-%d"))
    found = corrector.take_found()
    if found:  # the deriver's cells still wrong: it sets right those its counted facts agree on
        repair = counter_deriver.rederive_day(backend, day.date(), admission.admitted, found, corrector.detail_gone)
        corrector.report["derived_repaired"] = (corrector.report.get("derived_repaired", 0) + repair["repaired"]
                                                + repair["coarse"])


def _fix_metrics(backend, corrector, exact, kept, stamp, day_row=None):
    """Fix the metrics rows of ``exact`` (``{row: Counter}``) but the ``kept`` ones; mark hours
    and ``day_row``; flush."""
    for row in kept:  # never rewrite what we could not recount: Socorro's counters stay
        exact.pop(row, None)
    live = backend.get_rows(K.METRICS, list(exact), columns=[K.FAMILY_COUNTERS]) if exact else {}
    for row, counts in exact.items():
        live_cells = live.get(row, {})
        corrector.fix(K.METRICS, row, _named(counts), _decode_cells(live_cells), _derived_column)
        if row == day_row:
            written = {**{c: v for c, v in live_cells.items() if not _derived_column(c)},
                       **{c: K.encode_counter(v) for c, v in _named(counts).items()}}
            corrector.mark(row, stamp, digest(written))
        elif K.parse_metrics_row(row)[0] == "hour":
            corrector.mark(row, stamp)
    corrector.flush()


def _fix_day_signatures(backend, corrector, signature_counts, day_iso, columns, day_column, admission):
    """Fix the signature ``columns`` (closed hours, and ``day_column`` unless None) of every
    signature counted or live on the day, a chunk of rows at a time, their dimension keys
    mapped by the day's ``admission``."""
    for chunk in signature_counts.rows_of_day(day_iso, 1000):
        exact_sigs = collections.defaultdict(dict)
        for sig_row, per_key in signature_counts.counts_of(chunk).items():
            exact = exact_sigs[sig_row]
            for (hour_row, key), n in per_key.items():
                if DK.is_ranking_only(key):
                    continue  # counted for the rankings only (process type): no counter column
                key = admission.map_key(key) if key else None
                column = K.signature_counter_column("hour", hour_row)
                for cell in ([DK.with_key(column, key)] if column in columns else []) + \
                        ([DK.with_key(day_column, key)] if day_column in columns else []):
                    exact[cell] = exact.get(cell, 0) + n
        live = {}
        if corrector.cut_over:
            # a cut-over store's signature cells are the deriver's, only compared: the cells the
            # recount says the day holds are read, not every row whole (a busy row holds every
            # day's dimensioned cells: at 1 M crashes on HBase these reads timed out), so a cell
            # the day should not hold goes unseen
            found = backend.get_rows_columns(K.SIGNATURES, {row: sorted(cells) for row, cells in exact_sigs.items()
                                                             if cells})
            live = {row: _decode_cells(cells) for row, cells in found.items()}
        else:  # the whole family: dimensioned columns are open-ended
            for i in range(0, len(chunk), WHOLE_SIGNATURE_ROWS):
                part = chunk[i:i + WHOLE_SIGNATURE_ROWS]
                for row, cells in backend.get_rows(K.SIGNATURES, part, columns=[K.FAMILY_COUNTERS]).items():
                    live[row] = _decode_cells({c: v for c, v in cells.items() if DK.split_column(c)[0] in columns})
        _fix_signatures(corrector, live, exact_sigs)
        corrector.flush()


def _report_kept(report, tally, kept):
    """Say which intervals were left alone and which crash rows could not be read."""
    report["unreadable_rows"] = report.get("unreadable_rows", 0) + tally.unreadable_count
    examples = report.setdefault("unreadable_examples", [])
    examples.extend(tally.unreadable[:20 - len(examples)])
    coarse = sorted(r.decode() for r in kept if len(r) <= len(b"yyyy-mm-ddThh"))
    report["kept_intervals"] = report.get("kept_intervals", 0) + len(kept)
    listed = report.setdefault("kept_examples", [])
    listed.extend(coarse[:20 - len(listed)])


def _fix_signatures(corrector, live, exact_sigs):
    """``live``/``exact_sigs``: ``{signature row: {column: int}}``; queue the differences."""
    for row in set(live) | set(exact_sigs):
        corrector.fix(K.SIGNATURES, row, exact_sigs.get(row, {}), live.get(row, {}), kind="signatures")


def _month_days(month):
    days, day = [], month
    while day.month == month.month:
        days.append(day)
        day += timedelta(days=1)
    return days


def rollup_coarse(backend, level, start, corrector, stamp, signature_counts, admissions):
    """Make a closed month or year exact from the level below (or the crash rows if expired,
    their signature counts summed in the run's ``signature_counts``).  On a cut-over store its
    metrics are compared, and its signature cells left to the deriver, uncompared."""
    finer = "day" if level == "month" else "month"
    if level == "month":
        parts = _month_days(start)
    else:
        parts = [start.replace(month=m) for m in range(1, 13)]
    row = K.metrics_row(start, level)
    part_rows = [K.metrics_row(p, finer) for p in parts]
    live = backend.get_rows(K.METRICS, part_rows + [row], columns=[K.FAMILY_COUNTERS, b"timestamps"])
    total = collections.Counter()
    for part in part_rows:
        for column, value in _decode_cells(live.get(part, {})).items():
            if _derived_column(column) and column != K.counter_column(counters.UNIQUE_SIGNATURES):
                total[column] += value
    expired = (COL_SIG_DAYS_EXPIRED if level == "month" else COL_SIG_MONTHS_EXPIRED) in live.get(row, {})
    frozen = crashes_expired_before(backend)
    if expired and frozen is not None and start < frozen:
        return  # its detail and its crash rows are both gone: its counters stay as they are
    unique_column = K.counter_column(counters.UNIQUE_SIGNATURES)
    live_cells = live.get(row, {})
    live_counts = _decode_cells(live_cells)
    if not corrector.cut_over:
        unique = _coarse_signatures(backend, level, start, row, part_rows, expired, corrector, signature_counts,
                                    admissions)
        if unique is None:
            return  # a crash of it could not be counted: left alone
        total[unique_column] = unique
    else:
        # a cut-over store's signature cells and unique count are the deriver's, compared only:
        # their comparison reads every signature row whole (at 1 M crashes on HBase, rows of
        # 100,000 cells made its reads time out), and the days' comparisons already read the
        # cells the recount says each day holds
        live_counts.pop(unique_column, None)
    corrector.fix(K.METRICS, row, {c: v for c, v in total.items() if v}, live_counts, _derived_column)
    written = {**{c: v for c, v in live_cells.items() if not _derived_column(c) and c.startswith(b"counters:")},
               **{c: K.encode_counter(v) for c, v in total.items() if v}}
    corrector.mark(row, stamp, digest(written))


def _coarse_signatures(backend, level, start, row, part_rows, expired, corrector, signature_counts, admissions):
    """Make the signature columns of a closed month or year exact: the sums of the finer
    columns, or, where those were expired, the crash rows recounted into ``signature_counts``.
    Returns the interval's unique signatures, or None when a crash could not be counted (the
    interval is then left alone)."""
    finer = "day" if level == "month" else "month"
    fine_columns = [K.signature_counter_column(finer, r) for r in part_rows]
    coarse_column = K.signature_counter_columns(start)[level]
    if expired:  # day by day, into the run's signature counts (one number per signature and key)
        signature_counts.clear()
        end = K.interval_end(level, start)
        admission = admissions.of((end - timedelta(days=1)).date())
        # only the days holding crashes or counters: a year of a few crash days walks those
        for day in data_days.days_with_data(backend, start.date(), end.date()):
            tally = recount.count_day(backend, day, day + timedelta(days=1), signature_level=level,
                                      signature_counts=signature_counts)
            corrector.report["crashes_read"] += tally.crashes
            if tally.unaccounted or tally.whole_day_unaccounted:
                _report_kept(corrector.report, tally, {row})
                return None  # leave the whole month (year) alone: a crash in it could not be counted

    def recounted(per_key):
        out = collections.Counter()
        for (_interval, key), n in per_key.items():
            out[DK.with_key(coarse_column, admission.map_key(key) if key else None)] += n
        return dict(out)

    # one scan reads the finer columns and the live coarse one; each page is fixed and written as
    # it goes, so what is held is a page of signature rows, not every signature's columns
    unique = 0
    fine = set(fine_columns)
    # the whole counters family: the dimensioned columns (``…|key``) are open-ended
    for n, (sig_row, cells) in enumerate(backend.scan(K.SIGNATURES, columns=[K.FAMILY_COUNTERS],
                                                      page_size=_SIG_PAGE)):
        live_coarse, sums = {}, collections.Counter()
        for column, value in _decode_cells(cells).items():
            plain, key = DK.split_column(column)
            if plain == coarse_column:
                live_coarse[column] = value
            elif plain in fine and not expired:
                sums[DK.with_key(coarse_column, key)] += value
        if expired:
            exact = recounted(signature_counts.pop_counts(sig_row))
        else:
            exact = {c: v for c, v in sums.items() if v}
        corrector.fix(K.SIGNATURES, sig_row, exact, live_coarse, kind="signatures")
        unique += bool(exact.get(coarse_column))
        if n % _SIG_PAGE == _SIG_PAGE - 1:
            corrector.flush()  # rows behind the scan: writing them does not disturb it
    if expired:  # recounted signatures with no row in the scan
        for chunk in signature_counts.counted_rows(1000):
            for sig_row, per_key in signature_counts.counts_of(chunk).items():
                exact = recounted(per_key)
                corrector.fix(K.SIGNATURES, sig_row, exact, {}, kind="signatures")
                unique += bool(exact.get(coarse_column))
            corrector.flush()
    return unique

# -- the job ----------------------------------------------------------------------------------

def _previous_cutoff(backend):
    for run in runs.list_runs(backend, JOB):
        if run.status == runs.SUCCEEDED and isinstance(run.result, dict) and run.result.get("cutoff"):
            return _from_iso(run.result["cutoff"])
    return None


def plan(backend, cutoff, since=None, lookback_days=DEFAULT_LOOKBACK_DAYS):
    """The days to recompute (ISO dates, ascending): only days that hold crashes or counters
    (:func:`~socorro_store.jobs.data_days.days_with_data`), so the cost follows the data, not
    the calendar: a store with one crash from years ago walks one day, not every day since."""
    # the days held, from the first with any data (crash ids start in 2000): one-row scans that
    # skip from day to day, so a day's counters that outlived its crashes are found too
    held = data_days.days_with_data(backend, EPOCH, (_day(cutoff) + timedelta(days=1)).date())
    if not held:
        return []
    first = held[0]
    if since is not None:
        start = max(first, _day(K.parse_timestamp(since, "since")))
    else:
        previous = _previous_cutoff(backend)
        start = max(first, _day(previous) - timedelta(days=lookback_days)) if previous else first
    held = [d for d in held if d < cutoff]
    frozen = crashes_expired_before(backend)
    if frozen is not None:  # crash rows expired: recounting would take those crashes out
        held = [d for d in held if d >= frozen]
    days = []
    older = [d for d in held if d < start]
    if older:  # older days whose counters changed since they were rolled up
        rows = {K.metrics_row(d, "day"): d for d in older}
        keys = list(rows)
        live = {}
        for i in range(0, len(keys), 1000):
            live.update(backend.get_rows(K.METRICS, keys[i:i + 1000], columns=[K.FAMILY_COUNTERS, COL_DIGEST]))
        for row, d in rows.items():
            cells = live.get(row, {})
            if cells.get(COL_DIGEST) != digest(cells) or (COL_DIGEST not in cells and _decode_cells(cells)):
                days.append(d)
    days += [d for d in held if d >= start]
    return [d.strftime("%Y-%m-%d") for d in days]


def rollup(ctx, backend, until=None, grace_s=DEFAULT_GRACE_S, since=None,
           lookback_days=DEFAULT_LOOKBACK_DAYS, now=None, page_size=recount.PAGE):
    """The roll-up job body (see :func:`run_rollup`).  Checkpoints after each day."""
    checkpoint = ctx.checkpoint
    if checkpoint:
        cutoff, days, next_index = _from_iso(checkpoint["cutoff"]), checkpoint["days"], checkpoint["next"]
        report = checkpoint["report"]
    else:
        cutoff = cutoff_of(until, grace_s, now)
        ctx.set_phase("plan")
        days = plan(backend, cutoff, since, lookback_days)
        next_index = 0
        report = {"cutoff": _iso(cutoff), "days": len(days), "crashes_read": 0, "cells_written": 0,
                  "cells_deleted": 0, "drift": {}, "drift_examples": [], "months": 0, "years": 0,
                  "unreadable_rows": 0, "unreadable_examples": [], "kept_intervals": 0, "kept_examples": []}
        ctx.save({"cutoff": _iso(cutoff), "days": days, "next": 0, "report": report}, phase="days")
    stamp = _iso(datetime.now(UTC)).encode()
    cut = cut_over.enabled(backend)
    corrector = Corrector(backend, report, derived_store=cut,
                          expired_before=detail_retention.expired_before(backend) if cut else None)
    admissions = registry.Admissions(backend)
    # a run that recomputes every day from a day on (the first run, or --since) makes the
    # rankings of those days exact: reports may read them from then on
    complete_from = None  # a date, or the first day of any data
    if days and since is not None:
        since_day = _day(K.parse_timestamp(since, "since")).date()
        older = data_days.days_with_data(backend, EPOCH, since_day)  # nothing before it: from the start
        complete_from = since_day if older else rankings.FIRST_DAY
    elif days and _previous_cutoff(backend) is None:
        complete_from = rankings.FIRST_DAY  # the first run recomputes every day held
    with SpilledCounts() as signature_counts:
        _rollup_days(ctx, backend, cutoff, days, next_index, report, corrector, stamp, signature_counts, admissions,
                     page_size)
        _rollup_months_and_years(ctx, backend, cutoff, days, report, corrector, stamp, signature_counts, admissions)
    admissions.write_registry()
    if complete_from is not None:  # every day from it recomputed: its rankings are exact
        rankings.mark_complete(backend, complete_from)
    ctx.add_counts(crashes_read=report["crashes_read"], cells_written=report["cells_written"],
                   cells_deleted=report["cells_deleted"])
    return report


def _rollup_days(ctx, backend, cutoff, days, next_index, report, corrector, stamp, signature_counts, admissions,
                 page_size):
    recorded = set()
    for index in range(next_index, len(days)):
        # one signature-table scan per _SCAN_DAYS days, for the stale rows a day's recount finds
        # nothing in; a cut-over store's are the deriver's (compared, never written): no scan
        if not corrector.cut_over and days[index] not in recorded:
            batch = days[index:index + _SCAN_DAYS]
            record_live_signature_rows(backend, [_from_iso(d) for d in batch], cutoff, signature_counts)
            recorded.update(batch)
        rollup_day(backend, _from_iso(days[index]), cutoff, corrector, stamp, signature_counts, admissions,
                   on_page=ctx.heartbeat, page_size=page_size)
        corrector.flush()
        ctx.report("days", index + 1, len(days))
        ctx.save({"cutoff": _iso(cutoff), "days": days, "next": index + 1, "report": report}, phase="days")


def _rollup_months_and_years(ctx, backend, cutoff, days, report, corrector, stamp, signature_counts, admissions):
    # months and years touched by the recomputed days, when closed
    months = sorted({d[:7] for d in days})
    closed_months = [m for m in months if K.interval_end("month", _from_iso(m + "-01")) <= cutoff]
    ctx.set_phase("months")
    for month in closed_months:
        rollup_coarse(backend, "month", _from_iso(month + "-01"), corrector, stamp, signature_counts, admissions)
        corrector.flush()
        ctx.heartbeat()
    years = sorted({m[:4] for m in closed_months})
    ctx.set_phase("years")
    for year in years:
        start = _from_iso(year + "-01-01")
        if K.interval_end("year", start) <= cutoff:
            rollup_coarse(backend, "year", start, corrector, stamp, signature_counts, admissions)
            corrector.flush()
            report["years"] += 1
    report["months"] = len(closed_months)


def run_rollup(backend, until=None, grace_s=DEFAULT_GRACE_S, since=None, lookback_days=DEFAULT_LOOKBACK_DAYS,
               now=None, progress=None, page_size=recount.PAGE, **job_options):
    """Run the roll-up as job ``rollup`` (one live run, checkpoints, retries); return the report.

    ``until``: ISO time or datetime (default now); ``grace_s``: seconds an interval must be over
    before it is closed; ``since``: recompute every day from this date.  Raises
    :class:`~socorro_store.jobs.runs.JobLeaseHeld` when another rollup runs, or another job holds
    the shared ``counters`` lease (expire, reconcile-queue).
    """
    cutoff_of(until, grace_s, now)  # validate before the job starts
    if since is not None:
        K.parse_timestamp(since, "since")
    if not is_int(lookback_days) or lookback_days < 0:
        raise InvalidArgument(f"lookback_days must be an int >= 0: {lookback_days!r}")
    if not is_int(page_size) or page_size < 1:
        raise InvalidArgument(f"page_size must be an int >= 1: {page_size!r}")
    params = {"until": _iso(K.parse_timestamp(until)) if until is not None else None, "grace_s": grace_s,
              "since": str(since) if since is not None else None}
    run = runs.run_job(backend, JOB, lambda ctx: rollup(ctx, backend, until, grace_s, since, lookback_days, now, page_size),
                       params=params, progress=progress, locks=(runs.COUNTERS_LEASE,), **job_options)
    return {**run.result, "run_id": run.run_id}
