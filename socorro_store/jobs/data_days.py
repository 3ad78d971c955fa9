"""The days that hold data, found by skipping from one to the next: cost grows with data, not time.

A roll-up that walked every calendar day from the earliest crash to now paid for years of empty
days when one old crash was imported (issue 21, defect 11).  Here each salt bucket of a
day-ordered table is read with one-row scans that jump to the next day after each hit: a bucket
costs one call per day it holds, plus one that finds nothing.  Three sources say a day holds data:

* ``submitted_time`` (salt + submitted time + crash id): crashes with their pointer;
* ``crash_reports`` (salt + YYMMDD + crash id): crash rows without pointers (Socorro's happybase
  storage wrote none);
* ``metrics`` day rows (``yyyy-mm-dd`` and the rows under it): live counters of a day, even one
  whose crashes are gone, which the roll-up must make exact (zero) too.

:func:`crash_rows_of_day` reads the crash rows of one crash-id day in every layout a store on
Socorro's tables holds: ours (``salt + YYMMDD + crash id``) and Socorro's pre-salt one
(``YYMMDD + crash id``, which its 2013 client still read with ``old_format``).
"""

import re
from datetime import date, datetime, time, timedelta, timezone

from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema.stored import parse_stored_time_index_key

UTC = timezone.utc
_DAY_ROW = re.compile(rb"(\d{4})-(\d{2})-(\d{2})")


def _midnight(day):
    return datetime.combine(day, time.min, UTC)


def _first(backend, table, start, stop):
    """The first row key in ``[start, stop)``, or None: one call."""
    for row, _cells in backend.scan(table, start=start, stop=stop, columns=[K.COL_OOID], limit=1, page_size=1):
        return row
    return None


def _index_days(backend, start, end, found):
    for salt_char in K.SALTS:
        low, high = K.time_index_range(salt_char, start, end)
        while True:
            row = _first(backend, K.SUBMITTED_TIME, low, high)
            if row is None:
                break
            try:
                day = parse_stored_time_index_key(row)[1].date()
            except InvalidArgument:  # an unreadable pointer: step over it
                low = row + b"\x00"
                continue
            found.add(day)
            low = K.time_index_range(salt_char, _midnight(day + timedelta(days=1)))[0]


def _crash_row_days(backend, start, end, found):
    for salt_char in K.SALTS:
        salt = salt_char.encode("ascii")
        low, high = salt + start.strftime("%y%m%d").encode(), salt + end.strftime("%y%m%d").encode()
        while True:
            row = _first(backend, K.CRASH_REPORTS, low, high)
            if row is None:
                break
            try:
                day = K.crash_date(K.crash_id_from_row_key(row))
            except (InvalidArgument, ValueError):
                low = row + b"\x00"
                continue
            found.add(day)
            low = salt + (day + timedelta(days=1)).strftime("%y%m%d").encode()


def _metrics_days(backend, start, end, found):
    low, high = start.isoformat().encode(), end.isoformat().encode()
    while True:
        row = None
        for row, _cells in backend.scan(K.METRICS, start=low, stop=high, columns=[K.FAMILY_COUNTERS],
                                        limit=1, page_size=1):
            break
        if row is None:
            return
        match = _DAY_ROW.match(row)
        if match is None:  # a month or year row between the days: step over it
            low = row + b"\x00"
            continue
        day = date(*(int(part) for part in match.groups()))
        found.add(day)
        low = (day + timedelta(days=1)).isoformat().encode()


def days_with_data(backend, start, end):
    """Sorted UTC midnights (datetimes) of the days in ``[start, end)`` (dates) that hold crashes
    or metrics counters."""
    if end <= start:
        return []
    found = set()
    _index_days(backend, _midnight(start), _midnight(end), found)
    _crash_row_days(backend, start, end, found)
    _metrics_days(backend, start, end, found)
    return [_midnight(day) for day in sorted(found) if start <= day < end]


def crash_rows_of_day(backend, day, columns, page_size=500):
    """``(row, cells)`` of the crash rows of crash-id ``day`` (a date or datetime): salt by salt,
    then those in Socorro's pre-salt layout (``YYMMDD + crash id``, told by their ``ids:ooid``,
    which is added to ``columns``).  Who needs the crash id reads it from ``ids:ooid``: a
    pre-salt row's key has no salt."""
    columns = list(columns) + ([K.COL_OOID] if K.COL_OOID not in columns and b"ids" not in columns else [])
    for salt_char in K.SALTS:
        yield from backend.scan(K.CRASH_REPORTS, prefix=K.crash_day_prefix(salt_char, day), columns=columns,
                                page_size=page_size)
    presalt = day.strftime("%y%m%d").encode("ascii")
    for row, cells in backend.scan(K.CRASH_REPORTS, prefix=presalt, columns=columns, page_size=page_size):
        if row[len(presalt):] == cells.get(K.COL_OOID):  # a salted row of a day 20x0-x1-x… shares the prefix
            yield row, cells
