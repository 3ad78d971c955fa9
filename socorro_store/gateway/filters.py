"""The filters HBase's filter language names, applied to engine rows.

:func:`~.filter_parser.parse_filter` turns a filter string into a tree of :class:`Filter`
objects that follow HBase's
per-row protocol (``reset``, ``filter_row_key``, ``filter_cell`` returning a return code,
``transform_row``, ``filter_row``, ``filter_all_remaining``).  :func:`apply_filter` drives that
protocol the way HBase's region scanner does (``UserScanQueryMatcher.mergeFilterResponse``):

* each column's versions (up to the family's VERSIONS) are offered newest first; a scan returns
  one version per column, but the version after the included one is still offered to the
  filter before the scanner moves on, so a ValueFilter can surface an older version and a
  ``SKIP`` filter sees (and may reject the row for) the version behind the newest;
* ``NEXT_ROW`` ends the row for the cell's *family* only: each family is a store scanner of its
  own, so the other families' cells are still offered (a ColumnRangeFilter past its upper bound
  in family ``a`` still lets family ``b``'s columns in range through).
* the empty qualifier's versions are each offered (a "next column" seek stops at its next
  version), and a filter's ``filter_all_remaining`` ends each family's store as it next
  matches a cell, for the rest of the scan (see :func:`apply_filter`).

Errors raise :class:`FilterError`, HBase's IllegalArgumentException.
"""

import re

INCLUDE, INCLUDE_AND_NEXT_COL, SKIP, NEXT_COL, NEXT_ROW = 0, 1, 2, 3, 4


class FilterError(ValueError):
    """The filter string is not valid (HBase: IllegalArgumentException from ParseFilter)."""


# -- comparators -------------------------------------------------------------------------------

_OPS = {"<": lambda r: r > 0, "<=": lambda r: r >= 0, "=": lambda r: r == 0,
        "!=": lambda r: r != 0, ">=": lambda r: r <= 0, ">": lambda r: r < 0}


def _cmp(a, b):
    return (a > b) - (a < b)


class Comparator:
    """``compare_to(value)`` follows Java's ``ByteArrayComparable.compareTo``: operand vs value."""

    def __init__(self, kind, operand):
        self.kind, self.operand = kind, operand
        if kind == "regexstring":
            try:
                self.pattern = re.compile(operand, re.DOTALL)
            except re.error as exc:
                raise FilterError(f"Invalid regular expression {operand!r}: {exc}") from None
        elif kind == "substring":
            self.operand = operand.lower()

    def compare_to(self, value):
        if self.kind == "binary":
            return _cmp(self.operand, value)
        if self.kind == "binaryprefix":
            return _cmp(self.operand, value[:len(self.operand)])
        if self.kind == "regexstring":
            return 0 if self.pattern.search(value) else 1
        return 0 if self.operand in value.lower() else 1


def make_comparator(op, text):
    kind, sep, operand = text.partition(b":")
    kind = kind.decode("latin-1")
    if not sep or kind not in ("binary", "binaryprefix", "regexstring", "substring"):
        raise FilterError("Incorrect comparatorType")
    if kind in ("regexstring", "substring") and op not in ("=", "!="):
        raise FilterError("Only EQUAL or NOT_EQUAL comparisons are valid with this comparator")
    return Comparator(kind, operand)


def _keep(op, comparator, value):
    return _OPS[op](comparator.compare_to(value))


# -- filters -----------------------------------------------------------------------------------

class Filter:
    """Base filter: lets everything through.  Cells are ``(family, qualifier, ts, value)``."""

    has_filter_row = False
    reversed = False

    def reset(self):
        pass

    def filter_row_key(self, row):
        return False

    def filter_cell(self, cell):
        return INCLUDE, cell

    def transform_row(self, cells):
        return cells

    def filter_row(self):
        return False

    def filter_all_remaining(self):
        return False

    def set_reversed(self, value):
        self.reversed = value

    def is_family_essential(self, family):
        """False lets a region load the family only for rows the filter keeps (HBase's
        "column families on demand"), which a reversed scan refuses."""
        return True


class _RowDecision(Filter):
    """Filters that decide on the row key and then send every cell of a rejected row to NEXT_ROW."""

    out = False

    def reset(self):
        self.out = False

    def filter_cell(self, cell):
        return (NEXT_ROW, cell) if self.out else (INCLUDE, cell)

    def filter_row(self):
        return self.out


class KeyOnlyFilter(Filter):
    def __init__(self, len_as_value=False):
        self.len_as_value = len_as_value

    def filter_cell(self, cell):
        fam, qual, ts, value = cell
        return INCLUDE, (fam, qual, ts, len(value).to_bytes(4, "big") if self.len_as_value else b"")


class FirstKeyOnlyFilter(Filter):
    def reset(self):
        self.found = False

    def filter_cell(self, cell):
        if self.found:
            return NEXT_ROW, cell
        self.found = True
        return INCLUDE, cell


class PrefixFilter(_RowDecision):
    def __init__(self, prefix):
        self.prefix, self.passed = prefix, False

    def filter_row_key(self, row):
        head = row[:len(self.prefix)]
        if (head > self.prefix) if not self.reversed else (head < self.prefix):
            self.passed = True
        self.out = head != self.prefix
        return self.out

    def filter_all_remaining(self):
        return self.passed


class InclusiveStopFilter(_RowDecision):
    def __init__(self, stop):
        self.stop, self.done = stop, False

    def filter_row_key(self, row):
        self.done = (row > self.stop) if not self.reversed else (row < self.stop)
        self.out = self.done
        return self.done

    def filter_all_remaining(self):
        return self.done


class RowFilter(_RowDecision):
    def __init__(self, op, comparator):
        self.op, self.comparator = op, comparator

    def filter_row_key(self, row):
        self.out = not _keep(self.op, self.comparator, row)
        return self.out


class _CellCompare(Filter):
    part = 3  # index of the compared field in a cell

    def __init__(self, op, comparator):
        self.op, self.comparator = op, comparator

    def filter_cell(self, cell):
        return (INCLUDE if _keep(self.op, self.comparator, cell[self.part]) else SKIP), cell


class FamilyFilter(_CellCompare):
    part = 0

    def filter_cell(self, cell):
        return (INCLUDE if _keep(self.op, self.comparator, cell[0]) else NEXT_COL), cell


class QualifierFilter(_CellCompare):
    part = 1

    def filter_cell(self, cell):
        return (INCLUDE if _keep(self.op, self.comparator, cell[1]) else NEXT_COL), cell


class ValueFilter(_CellCompare):
    part = 3


class ColumnPrefixFilter(Filter):
    def __init__(self, *prefixes):
        self.prefixes = prefixes

    def filter_cell(self, cell):
        qual = cell[1]
        return (INCLUDE if any(qual.startswith(p) for p in self.prefixes) else NEXT_COL), cell


class MultipleColumnPrefixFilter(ColumnPrefixFilter):
    pass


class ColumnRangeFilter(Filter):
    """HBase passes '' through as an empty bound (not "unbounded"), so an empty max excludes all;
    an empty min, though, is no lower bound at all: ``('', false, …)`` still lets the empty
    qualifier through (probed on HBase 2.6.1)."""

    def __init__(self, low, low_inclusive, high, high_inclusive):
        self.low, self.low_inclusive, self.high, self.high_inclusive = low, low_inclusive, high, high_inclusive

    def filter_cell(self, cell):
        qual = cell[1]
        if self.low and (qual < self.low or (qual == self.low and not self.low_inclusive)):
            return NEXT_COL, cell
        if qual < self.high or (qual == self.high and self.high_inclusive):
            return INCLUDE, cell
        return NEXT_ROW, cell


class TimestampsFilter(Filter):
    def __init__(self, *timestamps):
        self.timestamps = frozenset(timestamps)

    def filter_cell(self, cell):
        return (INCLUDE if cell[2] in self.timestamps else SKIP), cell


class PageFilter(Filter):
    has_filter_row = True

    def __init__(self, size):
        if size < 0:
            raise FilterError(f"must be positive {size}")
        self.size, self.accepted = size, 0

    def filter_row(self):
        self.accepted += 1
        return self.accepted > self.size

    def filter_all_remaining(self):
        return self.accepted >= self.size


class ColumnCountGetFilter(Filter):
    """The first ``limit`` columns of a row, then the scan ends in a way only HBase's stores explain.

    Every offered cell counts one (``INCLUDE_AND_NEXT_COL`` up to ``limit``, ``NEXT_COL`` beyond)
    and ``filter_all_remaining`` is true once the count exceeds ``limit``; ``reset`` (after each
    row) sets it back to 0.  While it is true, each family's store scanner that matches another
    cell ends for the rest of the scan (:func:`apply_filter`), so later rows lose those families;
    the scan itself goes on, since the check between rows comes after the reset."""

    def __init__(self, limit):
        if limit < 0:
            raise FilterError(f"Limit must be positive {limit}")
        self.limit = limit
        self.count = 0

    def reset(self):
        self.count = 0

    def filter_row_key(self, row):
        return self.filter_all_remaining()

    def filter_all_remaining(self):
        return self.count > self.limit

    def filter_cell(self, cell):
        self.count += 1
        return (NEXT_COL if self.count > self.limit else INCLUDE_AND_NEXT_COL), cell


class ColumnPaginationFilter(Filter):
    """Columns ``offset`` to ``offset + limit - 1`` of each row, counted across families.

    HBase counts *calls*, not distinct columns: every cell offered is one more, and
    ``NEXT_COL`` / ``INCLUDE_AND_NEXT_COL`` normally move past a column's other versions, so
    a call is a column.  The empty qualifier is the exception (:func:`apply_filter`): its next
    version is offered again and counts as another column."""

    def __init__(self, limit, offset):
        if limit < 0 or offset < 0:
            raise FilterError("Limit and offset must be positive")
        self.limit, self.offset = limit, offset

    def reset(self):
        self.count = 0

    def filter_cell(self, cell):
        if self.count >= self.offset + self.limit:
            return NEXT_ROW, cell
        self.count += 1
        return (INCLUDE_AND_NEXT_COL if self.count > self.offset else NEXT_COL), cell


class SingleColumnValueFilter(Filter):
    """Rows whose ``family:qualifier`` passes the comparison; rows lacking it pass unless filterIfMissing."""

    has_filter_row = True

    def __init__(self, family, qualifier, op, comparator, if_missing=False, latest_only=True):
        self.family, self.qualifier = family, qualifier
        self.op, self.comparator = op, comparator
        self.if_missing, self.latest_only = if_missing, latest_only

    def reset(self):
        self.found = self.matched = False

    def filter_cell(self, cell):
        if self.matched or (self.latest_only and self.found):
            return INCLUDE, cell
        if cell[0] != self.family or cell[1] != self.qualifier:
            return INCLUDE, cell
        self.found = True
        if not _keep(self.op, self.comparator, cell[3]):
            return (NEXT_ROW if self.latest_only else INCLUDE), cell
        self.matched = True
        return INCLUDE, cell

    def filter_row(self):
        return (not self.matched) if self.found else self.if_missing

    def is_family_essential(self, family):
        return not self.if_missing or family == self.family


class SingleColumnValueExcludeFilter(SingleColumnValueFilter):
    """As SingleColumnValueFilter, but the tested column is left out of the results."""

    def transform_row(self, cells):
        return [c for c in cells if c[0] != self.family or c[1] != self.qualifier]


class DependentColumnFilter(Filter):
    """Keep only the cells whose timestamp one of the reference column's (offered) versions has;
    with ``drop`` the reference column itself is left out; with a comparison, only the reference
    versions whose value passes it count."""

    has_filter_row = True

    def __init__(self, family, qualifier, drop=False, op=None, comparator=None):
        self.family, self.qualifier, self.drop = family, qualifier, drop
        self.op, self.comparator = op, comparator
        self.stamps = set()

    def reset(self):
        self.stamps = set()

    def filter_cell(self, cell):
        if cell[0] != self.family or cell[1] != self.qualifier:
            return INCLUDE, cell  # decided in transform_row, once the stamps are known
        if self.comparator is not None and not _keep(self.op, self.comparator, cell[3]):
            return SKIP, cell
        self.stamps.add(cell[2])
        return (SKIP if self.drop else INCLUDE), cell

    def transform_row(self, cells):
        return [c for c in cells if c[2] in self.stamps]


class SkipFilter(Filter):
    """SKIP f: drop the whole row if f drops any of its cells (row keys are not offered to f)."""

    has_filter_row = True

    def __init__(self, inner):
        self.inner, self.drop = inner, False

    def set_reversed(self, value):
        self.reversed = value
        self.inner.set_reversed(value)

    def reset(self):
        self.inner.reset()
        self.drop = False

    def is_family_essential(self, family):
        return self.inner.is_family_essential(family)

    def filter_cell(self, cell):
        code, cell = self.inner.filter_cell(cell)
        self.drop = self.drop or code != INCLUDE
        return code, cell

    def transform_row(self, cells):
        return self.inner.transform_row(cells)

    def filter_row(self):
        return self.drop

    def filter_all_remaining(self):
        return self.inner.filter_all_remaining()


class WhileMatchFilter(SkipFilter):
    """WHILE f: the scan ends at the first row key, cell or row that f rejects."""

    def __init__(self, inner):
        super().__init__(inner)
        self.ended = False

    def filter_row_key(self, row):
        out = self.inner.filter_row_key(row)
        self.ended = self.ended or out
        return out

    def filter_cell(self, cell):
        code, cell = self.inner.filter_cell(cell)
        self.ended = self.ended or code != INCLUDE
        return code, cell

    def filter_row(self):
        out = self.inner.filter_row()
        self.ended = self.ended or out
        return out

    def filter_all_remaining(self):
        return self.ended or self.inner.filter_all_remaining()


class FilterList(Filter):
    """AND (MUST_PASS_ALL) or OR (MUST_PASS_ONE) of several filters."""

    def __init__(self, must_pass_all, filters):
        self.all, self.filters = must_pass_all, filters
        self.has_filter_row = any(f.has_filter_row for f in filters)

    def set_reversed(self, value):
        self.reversed = value
        for f in self.filters:
            f.set_reversed(value)

    def reset(self):
        for f in self.filters:
            f.reset()

    def is_family_essential(self, family):
        return any(f.is_family_essential(family) for f in self.filters)

    def filter_row_key(self, row):
        verdicts = [f.filter_all_remaining() or f.filter_row_key(row) for f in self.filters]
        return any(verdicts) if self.all else all(verdicts)

    def filter_cell(self, cell):
        codes, out = [], cell
        for f in self.filters:
            if f.filter_all_remaining():
                codes.append(NEXT_ROW)
                continue
            code, changed = f.filter_cell(cell if not self.all else out)
            codes.append(code)
            if code in (INCLUDE, INCLUDE_AND_NEXT_COL):
                out = changed
        if self.all:  # FilterListWithAND: the most restrictive, but "include, next column" + skip
            code = max(codes)  # moves on to the next column
            return (NEXT_COL if code == SKIP and INCLUDE_AND_NEXT_COL in codes else code), out
        code = min(codes)  # FilterListWithOR: the least restrictive; a skip beside "include,
        return (INCLUDE if code == INCLUDE_AND_NEXT_COL and SKIP in codes else code), out  # next col" includes

    def transform_row(self, cells):
        for f in self.filters:
            cells = f.transform_row(cells)
        return cells

    def filter_row(self):
        if self.all:
            return any(f.filter_row() for f in self.filters)
        return all(f.filter_row() for f in self.filters)

    def filter_all_remaining(self):
        done = [f.filter_all_remaining() for f in self.filters]
        return any(done) if self.all else all(done)


def apply_filter(flt, row, cells, closed=None):
    """Run one row through ``flt`` as HBase's scanner does; return the kept cells or None.

    ``cells`` are every visible version (at most the family's VERSIONS per column), sorted by
    family, qualifier, newest first.  Each family is a store scanner of its own
    (``StoreScanner`` + ``UserScanQueryMatcher``):

    * A column's versions are offered newest first.  ``INCLUDE`` keeps the first version only,
      but HBase counts versions again after the filter and only then seeks to the next column,
      so the version behind an included one is still offered (a ValueFilter can surface an
      older version; a ``SKIP`` filter sees it).
    * ``NEXT_COL`` and ``INCLUDE_AND_NEXT_COL`` seek to the next column, except for the empty
      qualifier: there HBase's "key for the next column" is the next *version* of the same
      column (``ScanQueryMatcher.getKeyForNextColumn``, HBASE-18471: a DeleteFamily marker
      could sort there), so each of its versions is offered again (a counting filter counts
      it as another column).  Only the first version a filter includes is answered: probes of
      HBase 2.6.1 show no later one, not even as a batch of its own (``scan_batching``).
      A family read by named qualifiers (``cells.explicit_families``, HBase's
      ExplicitColumnTracker) is the exception to the exception: its tracker marks the column
      done, so the empty qualifier's later versions are not offered.
    * ``NEXT_ROW`` ends the row for the cell's family only.
    * A store's matcher asks ``filter_all_remaining`` before every cell it matches, the first
      cell of its next row included, and a true answer ends that store for the rest of the scan
      (``DONE_SCAN``).  ``closed`` (a set kept across the rows of one scan) holds those
      families.  For filters whose verdict never goes back this just ends the scan; for
      ColumnCountGetFilter, whose count ``reset`` clears after each row, it drops families
      from all later rows.
    """
    if closed is None:
        closed = set()
    explicit = getattr(cells, "explicit_families", ())
    flt.reset()
    if flt.filter_row_key(row):
        return None
    kept, column, done_column, done_family = [], None, None, None
    family, after_filter, kept_column = None, 0, None
    for cell in cells:
        fam = cell[0]
        if fam != family:
            if family is not None and family not in closed and flt.filter_all_remaining():
                closed.add(family)  # the store's next match (next row) ends it
            family = fam
        if fam in closed or fam == done_family:
            continue
        if flt.filter_all_remaining():
            closed.add(fam)
            continue
        key = (fam, cell[1])
        if key != column:
            column, after_filter = key, 0
        elif key == done_column:
            continue
        # the empty qualifier's "next column" is its next version: only an explicit column
        # tracker marks it done
        next_col = key if cell[1] or fam in explicit else None
        code, out = flt.filter_cell(cell)
        if code == INCLUDE:
            after_filter += 1
            if after_filter == 1 and key != kept_column:
                kept.append(out)
                kept_column = key
            elif after_filter > 1:  # a second included version: HBase drops it, seeks on
                done_column = next_col
        elif code == INCLUDE_AND_NEXT_COL:
            if key != kept_column:
                kept.append(out)
                kept_column = key
            done_column = next_col
        elif code == NEXT_COL:
            done_column = next_col
        elif code == NEXT_ROW:
            done_family = fam  # a store scanner seeks its own family to the next row
    if family is not None and family not in closed and flt.filter_all_remaining():
        closed.add(family)
    kept = flt.transform_row(kept)
    if not kept or flt.filter_row():
        return None
    return kept
