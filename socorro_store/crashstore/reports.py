"""Reports from the counters: the top-crashers report, its OS and process-type splits, and the
crashes submitted per hour (one signature's history is :mod:`.signature_reports`).

They read only counters (``crash_report_signatures`` columns ``counters:hourly_…``/``daily_…``/
``monthly_…``/``yearly_…``, the daily rankings and ``metrics`` rows), never a crash row, so their
cost does not grow with the number of crashes.

Filters (``product``, ``version``, ``os``) read the dimensioned columns of the same intervals
(:mod:`socorro_store.schema.dimension_keys`): each filter is one exact column per interval, so
a filtered report is the same single column-filtered scan.  A value over the cardinality cap
has no columns of its own: the report says so (``counted_as``: ``##other##``).
"""

from datetime import datetime, timedelta, timezone

from ..checks import is_int
from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema import ranking_keys as RK
from . import counters, kept_ranking_cells, rankings

DEFAULT_TOP = 20
CHART_HOURS = 48
CHART_DAYS = 30


def _intervals(start, end):
    """``(level, [interval starts])`` covering ``[start, end)``: whole days when both ends are
    midnights, else whole hours."""
    if end <= start:
        raise InvalidArgument(f"empty period: {start.isoformat()} is not before {end.isoformat()}")
    for moment in (start, end):
        if moment.minute or moment.second or moment.microsecond:
            raise InvalidArgument(f"signature counters are hourly: {moment.isoformat()} is not a whole hour")
    daily = start.hour == 0 and end.hour == 0
    step = timedelta(days=1) if daily else timedelta(hours=1)
    out, moment = [], start
    while moment < end:
        out.append(moment)
        moment += step
    if len(out) > 24 * 366:
        raise InvalidArgument("a period of at most a year of hours (or any number of whole days)")
    return ("day" if daily else "hour"), out


_ranked = rankings.ranked  # {signature row: (rank, count)}, rank 1 = most crashes (ties by name)


def _filter(backend, product, version, os):
    """``(key, description)`` of a report filter: key None without one; ``description`` says
    each value asked for and the value it is counted as (``##other##`` over the cap)."""
    key = DK.filter_key(product, version, os)
    if key is None:
        return None, None
    wanted = {"product": product, "version": version, "os": os}
    described = {name: value for name, value in wanted.items() if value is not None}
    counted = dict(described)
    # read-only look-up of the registry: a value never admitted is counted as ##other## once full
    for field in described:
        value = DK.normalize(described[field])
        row = DK.registry_row(field, DK.normalize(product) if field == "version" else None)
        cells = backend.get_row(K.SIGNATURES_SEEN, row, columns=[b"seen"])
        if value not in (DK.UNKNOWN, DK.OTHER) and value not in DK.registry_values(cells) and \
                len(cells) >= counters.DIMENSION_CAPS[field]:
            counted[field] = DK.OTHER
    return key, {"filter": described, "counted_as": counted}


def _process_type_filter(process_type, level, product, version, os):
    """The ranking key of a process-type filter (None without one).  A process type is ranked
    per day alone (``~rank/<day>|pt=…``), with no counter column: it combines with no other
    filter, and covers whole days only."""
    if process_type is None:
        return None
    if not isinstance(process_type, str) or not process_type.strip():
        raise InvalidArgument(f"process_type must be a non-empty string: {process_type!r}")
    if product is not None or version is not None or os is not None:
        raise InvalidArgument("a process type filter combines with no product, version or OS filter")
    if level != "day":
        raise InvalidArgument("a process type filter covers whole days (midnight to midnight)")
    return DK.process_type_key(process_type)


def top_signatures(backend, start, end, limit=DEFAULT_TOP, product=None, version=None, os=None,
                   process_type=None):
    """The top-crashers report of ``[start, end)`` (whole hours, or whole days).

    Returns ``{"start", "end", "previous_start", "total", "submitted", "signatures": [...]}`` where
    each signature has ``rank``, ``signature``, ``count``, ``share`` (of ``total``, the crashes of
    every signature in the period), ``previous_rank``/``previous_count`` in the period of equal
    length just before, and ``movement``: ``new``, ``up``, ``down`` or ``same``.  ``submitted``
    is the crashes submitted in the period by the ``metrics`` rows (processed or not).
    Whole days (for all crashes or a product alone) are read from the daily rankings
    (:mod:`.rankings`: one multi-row read, whatever the number of signatures stored; a period of
    several days reads the closed days' top rows, :func:`~.rankings.read_top`); hours,
    other filters and days before the rankings are complete cost a column-filtered scan of
    ``crash_report_signatures`` instead.  Then one read of ``metrics``.

    ``product`` / ``version`` (with its product) / ``os``: only the crashes of that product,
    version, OS (any combination); ``total`` is then the filter's total, ``submitted`` the
    filter's submitted crashes (None with an OS filter: the raw crash has no OS), and
    ``dimension`` says the filter and what it is counted as.

    ``process_type`` (``content``, ``gpu``, ``parent`` = the browser, ``default``, ...): only
    that process type's crashes, read from its daily rankings (whole days, no other filter;
    ``submitted`` is then None).  A name outside :data:`~..schema.dimension_keys.PROCESS_TYPES`
    is counted as ``##other##``; days before the rankings are complete are
    :class:`InvalidArgument` (no counter column to scan).
    """
    start, end = K.parse_timestamp(start, "start"), K.parse_timestamp(end, "end")
    if limit is not None and (not is_int(limit) or limit < 1):
        raise InvalidArgument(f"limit must be a positive int: {limit!r}")
    level, moments = _intervals(start, end)
    pt_key = _process_type_filter(process_type, level, product, version, os)
    key, dimension = _filter(backend, product, version, os) if pt_key is None else (pt_key, {
        "filter": {"process_type": process_type},
        "counted_as": {"process_type": DK.normalize_process_type(process_type)}})
    previous_start = start - (end - start)
    _, previous = _intervals(previous_start, start)
    periods = [[m.date() for m in moments], [m.date() for m in previous]]
    if level == "day" and limit is not None:  # the top rows of the closed days, proven exact
        found = rankings.read_top(backend, periods, key, limit)
    elif level == "day":
        found = rankings.read_rankings(backend, periods, key)
        found = (_ranked(found[0]), sum(n for n in found[0].values() if n > 0), _ranked(found[1])) if found else None
    else:
        found = None
    if found is None and pt_key is not None:
        raise InvalidArgument("process types are ranked only from the first day the rankings are complete")
    if found is None:
        now_counts, then_counts = _scan_counts(backend, level, moments, previous, key)
        found = (_ranked(now_counts), sum(n for n in now_counts.values() if n > 0), _ranked(then_counts))
    ranks, total, previous_ranks = found
    metric_rows = [K.metrics_row(m, level) for m in moments]
    submitted_column = DK.with_key(K.counter_column(counters.SUBMITTED), key)
    metrics = backend.get_rows(K.METRICS, metric_rows, columns=[submitted_column])
    submitted = sum(K.decode_counter(cells[submitted_column])
                    for cells in metrics.values() if len(cells.get(submitted_column, b"")) == 8)
    if os is not None or pt_key is not None:
        submitted = None  # submitted crashes are counted per product and version only
    signatures = []
    for row, (rank, n) in sorted(ranks.items(), key=lambda item: item[1][0])[:limit]:
        before = previous_ranks.get(row)
        if before is None:
            movement = "new"
        else:
            movement = "up" if before[0] > rank else "down" if before[0] < rank else "same"
        signatures.append({"rank": rank, "signature": K.signature_from_row(row), "count": n,
                           "share": round(n / total, 6) if total else 0.0,
                           "previous_rank": before[0] if before else None,
                           "previous_count": before[1] if before else 0, "movement": movement})
    return {"start": start.isoformat(), "end": end.isoformat(), "previous_start": previous_start.isoformat(),
            "level": level, "total": total, "submitted": submitted, "signatures": signatures,
            **({"dimension": dimension} if dimension else {})}


def _scan_counts(backend, level, moments, previous, key):
    """``({signature row: n} of the period, of the previous one)`` by a column-filtered scan of
    every signature row (hours, filters with no ranking, days before the rankings)."""
    current_cols = {DK.with_key(K.signature_counter_column(level, K.metrics_row(m, level)), key) for m in moments}
    previous_cols = {DK.with_key(K.signature_counter_column(level, K.metrics_row(m, level)), key) for m in previous}
    now_counts, then_counts = {}, {}
    for row, cells in backend.scan(K.SIGNATURES, columns=sorted(current_cols | previous_cols), page_size=1000):
        for column, value in cells.items():
            if len(value) != 8:
                continue
            target = now_counts if column in current_cols else then_counts if column in previous_cols else None
            if target is not None:
                target[row] = target.get(row, 0) + K.decode_counter(value)
    return now_counts, then_counts


def crashes_per_hour(backend, now=None, hours=CHART_HOURS):
    """``[[hour row, crashes submitted]]`` of the ``hours`` hours up to ``now``'s, oldest first:
    one multi-row read of the ``metrics`` hour rows (their ``submitted_crash_reports``)."""
    if not is_int(hours) or not 1 <= hours <= 24 * 31:
        raise InvalidArgument(f"hours must be an int in 1..{24 * 31}: {hours!r}")
    now = datetime.now(timezone.utc) if now is None else K.parse_timestamp(now, "now")
    hour = now.replace(minute=0, second=0, microsecond=0)
    rows = [K.metrics_row(hour - timedelta(hours=h), "hour") for h in range(hours - 1, -1, -1)]
    column = K.counter_column(counters.SUBMITTED)
    cells = backend.get_rows(K.METRICS, rows, columns=[column])
    return [[row.decode("ascii"), K.decode_counter(value) if len(value) == 8 else 0]
            for row, value in ((row, cells.get(row, {}).get(column, b"")) for row in rows)]


def _split_kind(product, version, os):
    """The dimension kind splitting a report of this filter by OS (None: an OS filter, no split)."""
    if os is not None:
        return None
    return "pvo" if version is not None else "po" if product is not None else "os"


def _signed_columns(level, moments):
    """``[(signature column, sign)]`` whose signed sum is the sum of the ``level`` columns of
    ``moments`` (consecutive intervals, oldest first).  A period of days whose last month is
    inside it from its first day, and mostly, reads that month as its ``monthly_`` column less
    the days of it after the period: 30 days to the 29th are the first month's day, the month
    and the 30th (3 columns), not a column a day.  Only the last month: the days after a period
    are newer than it, and expiry deletes the oldest ``daily_`` columns first (and ``monthly_``
    ones only after them), so those days are kept whenever the period's are; the days before a
    period may be gone while the period is not."""
    plain = [(K.signature_counter_column(level, K.metrics_row(m, level)), 1) for m in moments]
    if level != "day" or not moments:
        return plain
    last = moments[-1]
    month = last.replace(day=1)
    if moments[0] > month:  # the days of the month before the period would count too
        return plain
    inside = [m for m in moments if m >= month]
    after, day = [], last + timedelta(days=1)
    while day.month == last.month:
        after.append(day)
        day += timedelta(days=1)
    if 1 + len(after) >= len(inside):
        return plain
    columns = plain[:len(moments) - len(inside)]
    columns.append((K.signature_counter_column("month", K.metrics_row(month, "month")), 1))
    columns += [(K.signature_counter_column("day", K.metrics_row(d, "day")), -1) for d in after]
    return columns


def os_splits(backend, signatures, start, end, product=None, version=None):
    """``{signature: {os name: n}}``: the crashes of each of ``signatures`` in ``[start, end)``
    (whole hours or days, as :func:`top_signatures`) by OS, of the product (and version) asked.

    The OS names are those admitted in the ``~dimensions/os`` registry, plus ``##unknown##`` and
    ``##other##`` (over the cap).  Two reads whatever the number of signatures: the registry row,
    and one multi-row get of the signatures' rows, column-filtered to the period's OS columns
    (intervals x OS names, at most 52 of them; a period of days reads its last month as the
    month less the days after the period, :func:`_signed_columns`).  Names with no crash are
    left out.
    """
    start, end = K.parse_timestamp(start, "start"), K.parse_timestamp(end, "end")
    DK.filter_key(product, version)  # a version needs its product
    level, moments = _intervals(start, end)
    signatures = list(signatures)
    if not signatures:
        return {}
    seen = backend.get_row(K.SIGNATURES_SEEN, DK.registry_row("os"), columns=[b"seen"])
    names = sorted(DK.registry_values(seen) | {DK.UNKNOWN, DK.OTHER})
    kind = _split_kind(product, version, None)
    norm = {"product": DK.normalize(product) if product is not None else None,
            "version": DK.normalize(version) if version is not None else None}
    keys = {DK.dimension_key(kind, os=name, **norm): name for name in names}
    columns = {DK.with_key(column, key): (name, sign)
               for column, sign in _signed_columns(level, moments) for key, name in keys.items()}
    rows = {K.signature_row(s): s for s in signatures}
    out = {s: {} for s in signatures}
    for row, cells in backend.get_rows(K.SIGNATURES, list(rows), columns=sorted(columns)).items():
        split = out[rows[row]]
        for column, value in cells.items():
            if column in columns and len(value) == 8:
                name, sign = columns[column]
                split[name] = split.get(name, 0) + sign * K.decode_counter(value)
    return {s: {name: n for name, n in sorted(split.items(), key=lambda item: (-item[1], item[0])) if n > 0}
            for s, split in out.items()}


def process_type_splits(backend, signatures, start, end):
    """``{signature: {process type: n}}``: the crashes of each of ``signatures`` in ``[start,
    end)`` (whole days) by process type (``parent`` = the browser; ``##other##`` for a name
    outside :data:`~..schema.dimension_keys.PROCESS_TYPES`), from the days' process-type
    rankings.  One multi-row get whatever the number of signatures: the rows ``~rank/<day>|pt=…``
    of every day and process type, column-filtered to the signatures' columns (so at most
    days x process types x signatures cells); a row this process read before and whose own
    slack is unchanged is not read again, only its slack
    (:mod:`~socorro_store.crashstore.kept_ranking_cells`: one get more).  Names with no crash are left out; a period before
    the rankings are complete gives what the rankings hold."""
    start, end = K.parse_timestamp(start, "start"), K.parse_timestamp(end, "end")
    level, days = _intervals(start, end)
    if level != "day":
        raise InvalidArgument("process types are ranked per day: give whole days (midnight to midnight)")
    signatures = list(signatures)
    if not signatures:
        return {}
    keys = {DK.process_type_key(name): name for name in sorted(DK.PROCESS_TYPES | {DK.OTHER})}
    rows = {RK.rank_row(day.date(), key): name for day in days for key, name in keys.items()}
    columns = {RK.rank_column(K.signature_row(s)): s for s in signatures}
    out = {s: {} for s in signatures}
    for row, cells in kept_ranking_cells.read_ranking_cells(backend, list(rows), sorted(columns)).items():
        name = rows[row]
        for column, value in cells.items():
            if column in columns and len(value) == 8:
                split = out[columns[column]]
                split[name] = split.get(name, 0) + K.decode_counter(value)
    return {s: {name: n for name, n in sorted(split.items(), key=lambda item: (-item[1], item[0])) if n > 0}
            for s, split in out.items()}
