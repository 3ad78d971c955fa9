"""The roll-up's corrections: exact values compared with the live cells, differences written.

Which counters are derived from the crash rows (:func:`is_derived`), and which of them the
deriver of a cut-over store owns (:func:`deriver_owns`): the roll-up never writes those.
"""

from ..backends.base import RowMutation
from ..crashstore import counters
from ..errors import InvalidArgument
from ..schema import dimension_keys as DK
from ..schema import keys as K
from ..schema import ranking_keys as RK

COL_ROLLED_UP = b"timestamps:rolled_up"
COL_DIGEST = b"timestamps:rollup_digest"
#: marks of ``expire`` on a month's (year's) metrics row: some of its daily (monthly) signature cells went
COL_SIG_DAYS_EXPIRED = b"timestamps:expired_signature_days"
COL_SIG_MONTHS_EXPIRED = b"timestamps:expired_signature_months"


def is_derived(name):
    """True for the metrics counters the roll-up recomputes from the crash rows (with their
    dimensioned forms ``name|key``)."""
    name = name.split("|", 1)[0]
    return (name in (counters.SUBMITTED, counters.HANG_PAIRS, counters.PROCESSING_ERRORS,
                     counters.UNIQUE_SIGNATURES)
            or name.startswith("submitted_crash_reports_legacy_throttle_")
            or (name.startswith("submitted_oop_") and name.endswith("_crash_reports")))


def deriver_owns(table, row, column):
    """Whether the deriver of a cut-over store writes this counter cell (and so the roll-up
    never does): every signature counter, every day's ranking cell, and the metrics counted
    from the crash rows (per crash, per hang pair, the unique signatures)."""
    if table == K.METRICS:
        return is_derived(column.split(b":", 1)[1].decode("utf-8", "replace"))
    return table in (K.SIGNATURES, K.SIGNATURES_SEEN)


class Corrector:
    """Compares exact values with live cells; queues puts/deletes of the differences.

    ``derived_store``: the store is cut over (:mod:`~socorro_store.crashstore.counter_deriver`):
    the cells the deriver owns (:func:`deriver_owns`) have one writer, the deriver, so a
    difference there is reported (``derived_differences``) and kept (:meth:`take_found`) for
    the deriver to set right, never written here.  ``expired_before``
    (:func:`~.detail_retention.expired_before`): a deriver's cell missing from an interval
    ``expire`` cut is detail past retention, no difference."""

    def __init__(self, backend, report, derived_store=False, expired_before=None):
        self.backend, self.report = backend, report
        self.owned = deriver_owns if derived_store else None
        self.expired_before = expired_before or {}
        self.mutations = {K.METRICS: {}, K.SIGNATURES: {}, K.SIGNATURES_SEEN: {}}
        self.found = {}
        self._expired_marks = {}

    @property
    def cut_over(self):
        """The store is cut over: the deriver's cells are compared, never written."""
        return self.owned is not None

    def take_found(self):
        """``{(table, row, column): exact}``: the deriver's cells found differing since the last
        call (a cut-over store), for the deriver to set right (:mod:`~socorro_store.crashstore.cell_repair`)."""
        found, self.found = self.found, {}
        return found

    def _mutation(self, table, row):
        return self.mutations[table].setdefault(row, RowMutation(row))

    def fix(self, table, row, exact, live, derived=lambda column: True, kind="metrics"):
        """``exact``/``live``: ``{column: int}``.  Queue differences; count drift."""
        if self.cut_over:
            differing = {c: exact.get(c) or 0 for c in set(exact) | set(live)
                         if self.owned(table, row, c) and (exact.get(c) or 0) != (live.get(c) or 0)
                         and not (c not in live and self.past_retention(table, row, c))}
            if differing:
                self.report["derived_differences"] = self.report.get("derived_differences", 0) + len(differing)
                self.found.update({(table, row, c): n for c, n in differing.items()})
            exact = {c: v for c, v in exact.items() if not self.owned(table, row, c)}
            live = {c: v for c, v in live.items() if not self.owned(table, row, c)}
        for column, value in exact.items():
            if value and live.get(column) != value:
                self._drift(kind, row, column, live.get(column), value)
                self._mutation(table, row).puts[column] = K.encode_counter(value)
                self.report["cells_written"] += 1
        for column, value in live.items():
            if derived(column) and not exact.get(column) and value is not None:
                self._drift(kind, row, column, value, 0)
                self._mutation(table, row).deletes.append(column)
                self.report["cells_deleted"] += 1

    def past_retention(self, table, row, column):
        """Whether ``expire`` cut the interval of this cell (its row's, or its column's)."""
        try:
            if table == K.METRICS:
                kind, start = K.parse_metrics_row(row)
            elif table == K.SIGNATURES:
                level, start, _key = DK.parse_signature_column(column)
                kind = "signature_" + level
            elif table == K.SIGNATURES_SEEN:  # a day's rankings go with its daily columns
                kind, start = "signature_day", K.parse_timestamp(RK.parse_rank_row(row)[0])
            else:
                return False
        except InvalidArgument:
            return False
        cut = self.expired_before.get(kind)
        return cut is not None and start < cut

    def detail_gone(self, table, row, column):
        """Whether ``expire`` may have deleted this cell, so that no sum of finer cells can count
        on it: a daily (monthly) signature cell when its month's (year's) row has the mark of
        such deletions and the cell is older than the latest cut (or no cut is recorded), other
        detail by the cuts (:meth:`past_retention`)."""
        if table == K.SIGNATURES:
            try:
                level, start, _key = DK.parse_signature_column(column)
            except InvalidArgument:
                return False
            if level in ("day", "month"):
                coarse = K.metrics_row(start, "month" if level == "day" else "year")
                mark = COL_SIG_DAYS_EXPIRED if level == "day" else COL_SIG_MONTHS_EXPIRED
                if (coarse, mark) not in self._expired_marks:
                    self._expired_marks[(coarse, mark)] = mark in self.backend.get_row(K.METRICS, coarse, [mark])
                cut = self.expired_before.get("signature_" + level)
                return self._expired_marks[(coarse, mark)] and (cut is None or start < cut)
        return self.past_retention(table, row, column)

    def _drift(self, kind, row, column, live, exact):
        drift = self.report["drift"]
        if kind != "rankings" and DK.SEPARATOR in column:  # a ranking column is a signature
            # tallied apart, without examples: a processed crash with no product/version moves
            # its dimensioned counts to the raw crash's values here, which is expected, not drift
            # worth an example
            kind += "_dimensions"
            drift[kind] = drift.get(kind, 0) + 1
            return
        drift[kind] = drift.get(kind, 0) + 1
        if len(self.report["drift_examples"]) < 20:
            self.report["drift_examples"].append(
                {"table": kind, "row": row.decode("utf-8", "replace"), "column": column.decode("utf-8", "replace"),
                 "live": live, "exact": exact})

    def mark(self, row, stamp, digest=None):
        puts = self._mutation(K.METRICS, row).puts
        puts[COL_ROLLED_UP] = stamp
        if digest is not None:
            puts[COL_DIGEST] = digest

    def flush(self):
        for table, rows in self.mutations.items():
            batch = [m for m in rows.values() if m.puts or m.deletes]
            for i in range(0, len(batch), 1000):
                self.backend.mutate_rows(table, batch[i:i + 1000])
        self.mutations = {K.METRICS: {}, K.SIGNATURES: {}, K.SIGNATURES_SEEN: {}}
