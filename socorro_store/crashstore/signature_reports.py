"""One signature's history from its counters: the report (trend, first seen, every interval),
the breakdown (last 30 days by product, version and OS), the page's narrow read of both, and
the first appearances of the signatures a top-crashers page shows.

A busy signature's counter row holds ~128,000 cells at 1 M crashes (every hourly, daily, monthly
and yearly column times every dimension key): :func:`signature_report` reads it whole (the CLI's
``signatures show``), the signature page reads the columns it shows
(:func:`signature_overview` ``with_counters=False``).  Nothing here reads a crash row.
"""

import functools
from datetime import datetime, timedelta, timezone

from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import keys as K
from . import counters
from .reports import CHART_DAYS, CHART_HOURS, _intervals


def _first_seen(by_level):
    """The most precise interval known to hold the signature's first crash: the earliest year,
    then within it the earliest month, day and hour whose columns are still kept."""
    found = None
    for level in _LEVELS:
        starts = sorted(by_level.get(level, {}))
        if found is not None:
            end = K.interval_end(found[0], found[1])
            starts = [s for s in starts if found[1] <= s < end]
        if starts:
            found = (level, starts[0])
    return found


_LEVELS = ("year", "month", "day", "hour")
_FINER = {"year": "month", "month": "day", "day": "hour"}


def _column(level, start, key=None):
    """The signature counter column of one interval, plain or with dimension ``key``."""
    return DK.with_key(K.signature_counter_column(level, K.metrics_row(start, level)), key)


def _first_seen_columns(now, key=None, years=30):
    """``{column: (level, start)}``: where a first crash is looked for, the plain (or ``key``)
    columns of ``years`` yearly, 36 monthly, 62 daily and 49 hourly intervals up to ``now``'s
    (the default retention keeps 3, 3, 31 and 49 of them: every column expiry leaves).  A new
    dict each call (callers add to it); the columns are worked out once an hour."""
    return dict(_first_seen_columns_of_hour(now.replace(minute=0, second=0, microsecond=0), key, years))


@functools.lru_cache(maxsize=16)
def _first_seen_columns_of_hour(hour, key, years):
    day = hour.replace(hour=0)
    moments = {"hour": [hour - timedelta(hours=h) for h in range(49)],
               "day": [day - timedelta(days=d) for d in range(62)], "month": [], "year": []}
    month = day.replace(day=1)
    for _ in range(36):
        moments["month"].append(month)
        month = (month - timedelta(days=1)).replace(day=1)
    moments["year"] = [day.replace(year=y, month=1, day=1) for y in range(max(1000, hour.year - years + 1), hour.year + 1)]
    return tuple((_column(level, m, key), (level, m)) for level, starts in moments.items() for m in starts)


def _by_level(cells, columns, positive=False):
    """``{level: {start: n}}`` of the counter ``cells`` read of ``columns`` ({column: (level,
    start)}); ``positive``: only cells above 0 (else every 8-byte cell, as a whole-row read)."""
    out = {}
    for column, value in cells.items():
        if column in columns and len(value) == 8:
            n = K.decode_counter(value)
            if n > 0 or not positive:
                level, start = columns[column]
                out.setdefault(level, {})[start] = n
    return out


def _finer_starts(level, start):
    """The starts of the intervals one level finer than ``(level, start)`` inside it."""
    finer, end = _FINER[level], K.interval_end(level, start)
    out, moment = [], start
    while moment < end:
        out.append(moment)
        moment = K.interval_end(finer, moment)
    return out


@functools.lru_cache(maxsize=1024)
def _finer_columns(level, start, key):
    """``((column, (finer level, start)), …)`` of the intervals one level finer inside ``(level,
    start)``: kept, since a report's signatures mostly descend into the same intervals."""
    finer = _FINER[level]
    return tuple((_column(finer, s, key), (finer, s)) for s in _finer_starts(level, start))


def _unread_finer(by_level, columns, key, now):
    """``{column: (level, start)}`` to read before :func:`_first_seen` of ``by_level`` (read
    from ``columns``) equals a whole-row read's: the finer intervals up to ``now``, not read
    yet, of an interval the descent finds (the months of its year, the days of its month, the
    hours of its day).  Empty: exact.  A level the descent skips (a year with no monthly column)
    is not looked into: a crash counts at every level at once and expiry drops the finer columns
    first, so no finer column is kept where its coarser one is gone; nor are intervals after
    ``now`` (a crash submitted in the future)."""
    for depth, level in enumerate(_LEVELS[:-1]):
        found = _first_seen({lv: by_level.get(lv, {}) for lv in _LEVELS[:depth + 1]})
        if found is not None and found[0] == level:
            missing = {c: at for c, at in _finer_columns(*found, key) if at[1] <= now and c not in columns}
            if missing:
                return missing
    return {}


def _trend_moments(now):
    """``(hours, days)``: the starts of the last :data:`CHART_HOURS` hours and
    :data:`CHART_DAYS` days up to ``now``'s, oldest first."""
    hour = now.replace(minute=0, second=0, microsecond=0)
    day = hour.replace(hour=0)
    return ([hour - timedelta(hours=h) for h in range(CHART_HOURS - 1, -1, -1)],
            [day - timedelta(days=d) for d in range(CHART_DAYS - 1, -1, -1)])


def _trend(now, count):
    """``(hourly, daily)``: ``[[interval row, count(level, start)]]`` of :func:`_trend_moments`."""
    hours, days = _trend_moments(now)
    return ([[K.metrics_row(m, "hour").decode("ascii"), count("hour", m)] for m in hours],
            [[K.metrics_row(m, "day").decode("ascii"), count("day", m)] for m in days])


def signature_report(backend, signature, now=None, product=None, version=None, os=None, read=None):
    """Everything the counters say of one signature.

    ``{"signature", "counters": {level: {interval row: n}}, "first_seen": {"level", "start"} or
    None, "hourly": [[hour row, n]] (the last 48 hours), "daily": [[day row, n]] (the last 30
    days)}``.  One row read (the whole ``counters`` family of its row: every interval and
    dimension key).  ``product``/``version``/``os``: the counts of that filter only.
    ``first_seen`` is of every column kept (of the filter), whatever its value.  The signature
    page needs no ``counters`` and reads less: :func:`signature_overview` ``with_counters=False``.
    """
    now = datetime.now(timezone.utc) if now is None else K.parse_timestamp(now, "now")
    cells = counters.get_signature_counters(backend, signature, product, version, os, read=read)
    by_level = {}
    for name, n in cells.items():
        try:
            level, start = K.parse_signature_counter_column(K.FAMILY_COUNTERS + b":" + name.encode("utf-8"))
        except InvalidArgument:
            continue
        by_level.setdefault(level, {})[start] = n
    first = _first_seen(by_level)
    hourly, daily = _trend(now, lambda level, m: by_level.get(level, {}).get(m, 0))
    return {
        "signature": K.signature_name(signature),
        "counters": {level: {K.metrics_row(start, level).decode("ascii"): n for start, n in sorted(values.items())}
                     for level, values in by_level.items()},
        "first_seen": {"level": first[0], "start": first[1].isoformat()} if first else None,
        "hourly": hourly,
        "daily": daily,
    }


def _breakdown_days(start, end):
    """The days of a breakdown's ``[start, end)`` (whole days, else InvalidArgument)."""
    start, end = K.parse_timestamp(start, "start"), K.parse_timestamp(end, "end")
    level, days = _intervals(start, end)
    if level != "day":
        raise InvalidArgument("a breakdown covers whole days (midnight to midnight)")
    return days


def _ranked_breakdown(totals):
    """``{"product", "version", "os"}`` of ``totals`` ({"p"|"pv"|"os": {label: n}}): most first,
    names with no crash left out."""
    def ranked(kind):
        return [[*label, n] for label, n in sorted(totals[kind].items(), key=lambda item: (-item[1], item[0]))
                if n > 0]

    return {"product": ranked("p"), "version": ranked("pv"), "os": ranked("os")}


def signature_breakdown(backend, signature, start, end, read=None):
    """The crashes of ``signature`` in ``[start, end)`` (whole days) by product, by product and
    version, and by OS: ``{"product": [[name, n]], "version": [[product, version, n]], "os":
    [[name, n]]}``, most first.  One read of the signature's row (its daily dimensioned columns).
    A value over the cardinality cap is counted under ``##other##``.  ``read``: the row's
    :func:`~.counters.read_counters`, when the caller already read it."""
    days = _breakdown_days(start, end)
    wanted = {K.metrics_row(day, "day").decode("ascii") for day in days}
    totals = {"p": {}, "pv": {}, "os": {}}
    if read is None:
        read = counters.read_counters(backend, K.SIGNATURES, K.signature_row(signature))
    for name, n in read.items():
        base, sep, key = name.partition("|")
        if not sep or not base.startswith("daily_") or base[len("daily_"):] not in wanted:
            continue
        try:
            kind, values = DK.parse_dimension_key(key.encode("ascii"))
        except (InvalidArgument, UnicodeEncodeError):
            continue
        if kind in totals:
            label = tuple(values[f] for f in ("product", "version", "os") if f in values)
            totals[kind][label] = totals[kind].get(label, 0) + n
    return _ranked_breakdown(totals)


def signature_overview(backend, signature, now, start, end, product=None, version=None, os=None,
                       with_counters=True):
    """``(signature_report, signature_breakdown)`` of one signature (a signature page shows both).

    ``with_counters`` (the default): from one read of its whole counter row, as those two
    functions compute them.  ``with_counters=False`` (the web page): the same report without
    ``counters``, and the same breakdown, read from explicit columns only (the row of a busy
    signature holds ~128,000 cells: every interval x every dimension key), by
    :func:`_page_reads`."""
    if with_counters:
        read = counters.read_counters(backend, K.SIGNATURES, K.signature_row(signature))
        return (signature_report(backend, signature, now, product, version, os, read=read),
                signature_breakdown(backend, signature, start, end, read=read))
    return _page_reads(backend, signature, now, start, end, product, version, os)


def _registry_names(backend, rows):
    """``{registry row: admitted values + ##unknown## + ##other##}`` of ``rows`` (one read)."""
    found = backend.get_rows(K.SIGNATURES_SEEN, list(rows), columns=[b"seen"])
    return {row: DK.registry_values(found.get(row, {})) | {DK.UNKNOWN, DK.OTHER} for row in rows}


_BREAKDOWN_FIELDS = {"p": ("product",), "pv": ("product", "version"), "os": ("os",)}


def _dimension_columns(kind, labels, plain_days):
    """``{column: (kind, label, day)}``: the daily columns of ``kind`` (``p``, ``pv``, ``os``)
    for each label (``(product,)``, ``(product, version)``, ``(os,)``) and day of
    ``plain_days`` ({plain daily column: day})."""
    out = {}
    for label in labels:
        key = DK.dimension_key(kind, **dict(zip(_BREAKDOWN_FIELDS[kind], label)))
        out.update({DK.with_key(column, key): (kind, label, d) for column, d in plain_days.items()})
    return out


def _decoded(cells):
    return {c: K.decode_counter(v) for c, v in cells.items() if len(v) == 8}


def _sums_match(values, dims, kind, plain_days):
    """True when each day's ``kind`` columns read (``dims``) sum to its plain column."""
    sums = {}
    for column, (k, _label, d) in dims.items():
        if k == kind and column in values:
            sums[d] = sums.get(d, 0) + values[column]
    return all(sums.get(d, 0) == values.get(c, 0) for c, d in plain_days.items())


def _page_reads(backend, signature, now, start, end, product, version, os):
    """The signature page's ``(report without counters, breakdown)``, equal to the whole-row
    read's, from explicit columns (``backend.get_row``/``get_rows`` with column lists):

    1. the registry rows ``~dimensions/product`` and ``~dimensions/os`` (one ``get_rows``);
    2. the signature's row: the trend (48 hourly, 30 daily columns of the filter), where a first
       crash is looked for (:func:`_first_seen_columns`: 30 yearly, 36 monthly, 62 daily, 49
       hourly of the filter), the plain daily columns of the breakdown's days and their ``|p=``
       and ``|os=`` columns of every admitted value, ``##unknown##`` and ``##other##``
       (days x (products + OSes + 4): at most 30 x 154);
    3. when the signature has a daily column in those days, the version registry rows of the
       products it has a ``|p=`` column of, and ``##other##`` (one ``get_rows``: one call more
       than reading them with step 1, so as to list the versions of its products only, not of
       up to 100 products x 200 versions);
    4. then the row's ``|pv=`` columns of those versions on the days it has a ``|p=`` column of
       the product (days x (versions + 2) at most), with the finer intervals
       :func:`_unread_finer` asks for first seen;
    5. only when the first crash is older than those windows (a store never expired, or kept
       longer): at most three more reads of at most 12, 31 and 24 columns (the months of its
       year, the days of its month, the hours of its day), the first with read 4 if there is one.

    So 4 calls for a signature crashing in the last 30 days (2 for one that did not), and cells
    in proportion to the values it crashed in, never its hourly or monthly dimensioned columns.

    Exactness: a day's ``|p=`` columns sum to its plain column, and so do its ``|os=`` and its
    ``|pv=`` columns (a crash counts in all of them at once; the roll-up rewrites them
    together).  When the columns read do not (a value ``rollup`` took out of the registry that
    still has columns in the window, a value admitted by arrival and dropped before the recount
    of its day, rows written without dimensioned columns), the whole row is read instead (one
    more call) and everything computed from it, as before: the page never shows a count short.
    (Unread columns summing to 0 but not all 0, a transient of reprocessing, would go unseen.)
    """
    now = datetime.now(timezone.utc) if now is None else K.parse_timestamp(now, "now")
    key = DK.filter_key(product, version, os)  # the report's errors first, then the breakdown's
    days = _breakdown_days(start, end)
    row = K.signature_row(signature)
    registry = _registry_names(backend, [DK.registry_row("product"), DK.registry_row("os")])
    plain_days = {_column("day", d): d for d in days}
    levels = _first_seen_columns(now, key)  # {column of the filter: (level, start)}: read
    hours, trend_days = _trend_moments(now)  # within the first-seen windows; listed all the same
    levels.update({_column(level, m, key): (level, m) for level, ms in (("hour", hours), ("day", trend_days))
                   for m in ms})
    if key is None:
        levels.update({c: ("day", d) for c, d in plain_days.items()})
    dims = {**_dimension_columns("p", [(v,) for v in registry[DK.registry_row("product")]], plain_days),
            **_dimension_columns("os", [(v,) for v in registry[DK.registry_row("os")]], plain_days)}
    cells = backend.get_row(K.SIGNATURES, row, columns=sorted(set(levels) | set(plain_days) | set(dims)))
    values = _decoded(cells)
    if not (_sums_match(values, dims, "p", plain_days) and _sums_match(values, dims, "os", plain_days)):
        return _whole_row(backend, signature, now, start, end, product, version, os)
    finer = _unread_finer(_by_level(cells, levels), levels, key, now)
    crashed = {c: d for c, d in plain_days.items() if c in cells}
    if crashed:  # the versions of its products, on the days it has a column of the product
        product_days = {DK.OTHER: dict(crashed)}  # ##other##:##other## whatever the product counted
        for column, (kind, label, d) in dims.items():
            if kind == "p" and column in cells:
                product_days.setdefault(label[0], {})[_column("day", d)] = d
        products = sorted(product_days)
        versions = _registry_names(backend, [DK.registry_row("version", p) for p in products])
        pv = {}
        for p in products:
            pv.update(_dimension_columns("pv", [(p, v) for v in versions[DK.registry_row("version", p)]],
                                         product_days[p]))
        dims.update(pv)
        more = backend.get_row(K.SIGNATURES, row, columns=sorted(set(pv) | set(finer)))
        cells.update(more)
        values.update(_decoded(more))
        if not _sums_match(values, dims, "pv", plain_days):
            return _whole_row(backend, signature, now, start, end, product, version, os)
        levels.update(finer)
    for _ in range(3):  # the first crash's month, day, hour: each read once at most
        finer = _unread_finer(_by_level(cells, levels), levels, key, now)
        if not finer:
            break
        more = backend.get_row(K.SIGNATURES, row, columns=sorted(finer))
        cells.update(more)
        values.update(_decoded(more))
        levels.update(finer)
    first = _first_seen(_by_level(cells, levels))
    hourly, daily = _trend(now, lambda level, m: values.get(_column(level, m, key), 0))
    totals = {"p": {}, "pv": {}, "os": {}}
    for column, (kind, label, _d) in dims.items():
        if column in values:
            totals[kind][label] = totals[kind].get(label, 0) + values[column]
    report = {"signature": K.signature_name(signature),
              "first_seen": {"level": first[0], "start": first[1].isoformat()} if first else None,
              "hourly": hourly, "daily": daily}
    return report, _ranked_breakdown(totals)


def _whole_row(backend, signature, now, start, end, product, version, os):
    """:func:`_page_reads`' answer from one read of the whole counter row (the former way)."""
    report, breakdown = signature_overview(backend, signature, now, start, end, product, version, os)
    report.pop("counters")
    return report, breakdown


def first_appearances(backend, signatures, now=None, years=30):
    """``{signature: {"level", "start"} or None}``: the most precise interval known to hold each
    signature's first crash (as :func:`signature_report`'s ``first_seen``), from the plain
    columns above 0 still kept, up to ``now``: the ``years`` yearly columns, then (the descent
    of :func:`_unread_finer`) the months of the first year found, the days of its first month
    and the hours of its first day.  One multi-row get a level (:meth:`~socorro_store.backends.
    base.Backend.get_rows_columns`: each row its own columns), whatever the number of
    signatures: about 30 + 12 + 31 + 24 columns a signature at most, not every interval of every
    level (177), which the busiest rows of ``crash_report_signatures`` make costly."""
    now = datetime.now(timezone.utc) if now is None else K.parse_timestamp(now, "now")
    signatures = list(signatures)
    if not signatures:
        return {}
    rows = {K.signature_row(s): s for s in signatures}
    found = dict.fromkeys(rows)  # {row: (level, start)}: the finest interval known to hold the first crash
    yearly = tuple(item for item in _first_seen_columns_of_hour(now.replace(minute=0, second=0, microsecond=0),
                                                                None, years) if item[1][0] == "year")
    asking = {None: yearly}  # {interval descended into: its finer columns up to now}, shared by rows
    pending = dict.fromkeys(rows)  # {row: the interval it descends into (None: the years)}
    while pending:
        lists = {at: [column for column, _at in asking[at]] for at in set(pending.values())}
        cells = backend.get_rows_columns(K.SIGNATURES, {row: lists[at] for row, at in pending.items()})
        descending = {}
        for row, at in pending.items():
            got = cells.get(row, {})
            crashed = [start for column, start in asking[at] if _counted(got.get(column))]
            if not crashed:  # none at this level (expired, or not counted there): the coarser one stands
                continue
            found[row] = first = min(crashed, key=lambda interval: interval[1])
            if first[0] != "hour":
                if first not in asking:
                    asking[first] = tuple(item for item in _finer_columns(*first, None) if item[1][1] <= now)
                if asking[first]:
                    descending[row] = first
        pending = descending
    return {signature: {"level": found[row][0], "start": found[row][1].isoformat()} if found[row] else None
            for row, signature in rows.items()}


def _counted(value):
    """A counter cell above 0."""
    return value is not None and len(value) == 8 and K.decode_counter(value) > 0
