"""Which of the deriver's cells a roll-up may set right, and from what.

A cell of the deriver can be wrong while every crash's counted facts are right: a batch lost or
applied twice (the lease defect of a store built before its fix left 2,310 such cells over two
days of a 1 M-crash store).  Deriving the crashes again moves nothing then, since their facts
did not change.  What :meth:`~.rederivation.Rederivation.rederive_day` does instead, for the
cells a roll-up found differing from its recount:

* **a cell inside the day** (a minute, hour or day metrics cell, an hourly or daily signature
  cell, a day's ranking cell) is set to the recount's value when the facts the deriver counted
  the day's crashes under, read under its lease, sum to that same value: the crash rows and the
  deriver's own view then agree, and only the cell is wrong;
* **a month's and a year's cell** of a day cell so set is set to the sum of its finer cells
  (the month's days, the year's months), when every one of them is within retention.

Left as found: the unique signature counts (they follow the signature cells, moved by the
deriver's own rule when a repair takes a signature cell to or from zero) and the hang pairs
(counted by the pair's sides, :mod:`.hang_pairs`, not per crash).
"""

import calendar
from datetime import timedelta

from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema import ranking_keys as RK
from .counters import HANG_PAIRS, UNIQUE_SIGNATURES

_LEFT_NAMES = (UNIQUE_SIGNATURES, HANG_PAIRS)


def in_day(key):
    """Whether a roll-up may set this cell ``(table, row, column)`` to its recount: a cell of
    an interval inside one day that a crash's counted facts add to."""
    table, row, column = key
    try:
        if table == K.METRICS:
            name = column.partition(b":")[2].split(DK.SEPARATOR, 1)[0].decode("utf-8", "replace")
            return K.parse_metrics_row(row)[0] in ("minute", "hour", "day") and name not in _LEFT_NAMES
        if table == K.SIGNATURES:
            return DK.parse_signature_column(column)[0] in ("hour", "day")
        if table == K.SIGNATURES_SEEN:
            RK.parse_rank_row(row)  # a day's ranking row, not its head, top or slack row
            return column.startswith(b"seen:") and not column.startswith(b"seen:\xff")
    except InvalidArgument:
        pass
    return False


def coarser(key):
    """For a day cell (a metrics day row's cell, a daily signature cell), ``[(coarse key, [finer
    keys])]``: its month's cell with the month's day cells, then its year's with the year's month
    cells.  Empty for any other cell."""
    table, row, column = key
    if table == K.METRICS:
        level, start = K.parse_metrics_row(row)
        if level != "day":
            return []
        month, year = start.replace(day=1), start.replace(month=1, day=1)
        return [((table, K.metrics_row(month, "month"), column),
                 [(table, K.metrics_row(d, "day"), column) for d in _days_of(month)]),
                ((table, K.metrics_row(year, "year"), column),
                 [(table, K.metrics_row(year.replace(month=m), "month"), column) for m in range(1, 13)])]
    if table == K.SIGNATURES:
        level, start, dim = DK.parse_signature_column(column)
        if level != "day":
            return []
        month, year = start.replace(day=1), start.replace(month=1, day=1)

        def cell(lvl, moment):
            return table, row, DK.with_key(K.signature_counter_column(lvl, K.metrics_row(moment, lvl)), dim)

        return [(cell("month", month), [cell("day", d) for d in _days_of(month)]),
                (cell("year", year), [cell("month", year.replace(month=m)) for m in range(1, 13)])]
    return []


def _days_of(month):
    return [month + timedelta(days=i) for i in range(calendar.monthrange(month.year, month.month)[1])]
