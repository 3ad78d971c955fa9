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
  (the month's days, the year's months), when ``expire`` may have deleted none of them.

The deriver's view of a day (:class:`CountedDay`) is what its counted facts add to each cell,
an hour's and the day's unique signatures are the distinct signatures they count, and a hang
pair counts at the time the deriver recorded for it (:mod:`.hang_pairs`).  A cell a crash with
a record waiting counts in is left (:meth:`CountedDay.drop_waiting`).  A month's and a year's
unique count follows their signature cells, by the deriver's own rule, when a repair takes one
to or from zero.
"""

import calendar
from datetime import timedelta

from ..errors import InvalidArgument
from ..schema import derived_keys as D
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema import ranking_keys as RK
from .contributions import increments_of
from .counters import HANG_PAIRS, UNIQUE_SIGNATURES, metric_increments
from .hang_pairs import hang_side, parse_pair_time

UNIQUE_COLUMN = K.counter_column(UNIQUE_SIGNATURES)
HANG_COLUMN = K.counter_column(HANG_PAIRS)


def in_day(key):
    """Whether a roll-up may set this cell ``(table, row, column)`` to its recount: a cell of
    an interval inside one day (a minute, an hour, the day)."""
    table, row, column = key
    try:
        if table == K.METRICS:
            level = K.parse_metrics_row(row)[0]
            return level in ("minute", "hour", "day") and not (column == UNIQUE_COLUMN and level == "minute")
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
    cells.  Empty for any other cell (a unique count too: the month's follows its signature
    cells)."""
    table, row, column = key
    if table == K.METRICS:
        level, start = K.parse_metrics_row(row)
        if level != "day" or column == UNIQUE_COLUMN:  # unique counts do not add up
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


def read_cells(backend, keys):
    """``{(table, row, column): int}`` of the counter cells ``keys``, read by name (0: no cell),
    one read per table."""
    wanted = {}
    for table, row, column in keys:
        wanted.setdefault(table, {}).setdefault(row, []).append(column)
    out = {}
    for table, columns_by_row in wanted.items():
        found = backend.get_rows_columns(table, columns_by_row)
        for row, columns in columns_by_row.items():
            for column in columns:
                raw = found.get(row, {}).get(column)
                out[(table, row, column)] = K.decode_counter(raw) if raw is not None and len(raw) == 8 else 0
    return out


def _days_of(month):
    return [month + timedelta(days=i) for i in range(calendar.monthrange(month.year, month.month)[1])]


class CountedDay:
    """What the deriver counts the cells ``wanted`` (``(table, row, column)``, those
    :func:`in_day`) of one day at: summed from the counted facts of the day's crashes
    (:meth:`add`), the distinct signatures for the unique counts, the recorded times of the
    hang pairs (:meth:`add_pairs`)."""

    def __init__(self, wanted):
        self.sums = {key: 0 for key in wanted if in_day(key)}
        self.signatures = {row: set() for table, row, column in self.sums if column == UNIQUE_COLUMN}
        self.pairs = any(column == HANG_COLUMN for _table, _row, column in self.sums)

    def __bool__(self):
        return bool(self.sums)

    def add(self, facts):
        """Count a crash counted under ``facts`` (capped, as the deriver counts it)."""
        for inc in increments_of(facts):
            key = (inc.table, inc.row, inc.column)
            if key in self.sums:
                self.sums[key] += inc.amount
        if self.signatures and facts["proc"] is not None:
            for row in _rows_of(facts):
                if row in self.signatures:
                    self.signatures[row].add(facts["proc"][0])

    def add_pairs(self, backend):
        """Count the hang pairs at the times the deriver recorded for them (one scan of those
        records, only when a pair count is wanted)."""
        if not self.pairs:
            return
        for _row, cells in backend.scan(K.DERIVED, prefix=D.HANG_PREFIX, columns=[D.COL_PAIRED]):
            at = parse_pair_time(cells.get(D.COL_PAIRED, b""))
            for inc in metric_increments(at, [HANG_PAIRS]) if at is not None else ():
                key = (inc.table, inc.row, inc.column)
                if key in self.sums:
                    self.sums[key] += 1

    def drop_waiting(self, facts):
        """Leave every cell a crash with a record waiting counts in, as counted under
        ``facts``: its row may be gone already (a deletion not derived yet)."""
        for inc in increments_of(facts):
            self.sums.pop((inc.table, inc.row, inc.column), None)
        if facts is not None:
            for row in _rows_of(facts):
                self.sums.pop((K.METRICS, row, UNIQUE_COLUMN), None)
            if hang_side(facts) is not None:  # its pair counts at its later side's time
                self.sums = {key: n for key, n in self.sums.items() if key[2] != HANG_COLUMN}

    def totals(self):
        """``{key: value}``: the counts of the cells wanted."""
        return {**self.sums, **{(K.METRICS, row, UNIQUE_COLUMN): len(names) for row, names in self.signatures.items()
                                if (K.METRICS, row, UNIQUE_COLUMN) in self.sums}}


def _rows_of(facts):
    rows = K.metrics_rows(facts["t"])
    return rows["hour"], rows["day"]
