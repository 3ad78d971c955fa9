"""The common read in one query and no Python per cell: newest versions of one-version families.

A read qualifies (:func:`plan`) when every family it reads keeps one version (VERSIONS = 1) and
it asks for at least one version: its answer is the newest visible cell of each column.  Then:

* the read time range (``ts < timestamp``) and each family's TTL (``ts > now - TTL``) are in the
  SQL, so every cell the query returns is visible;
* puts prune a column to its VERSIONS, so each column returns one cell, its newest visible one;
  the query's rows, sorted by family, qualifier and newest first, are the answer as SQLite hands
  them over: ``(family, qualifier, ts, value)`` tuples (:data:`CELLS`), or ``family:qualifier``
  keys and values that ``dict()`` takes as they come (:data:`VALUES`; :data:`VALUES_TS` with
  ``(value, ts)``, the backends' ``include_timestamp``);
* values are decoded in SQL (``codec.SQL_VALUE``: Python runs only for compressed ones).

Nothing relies on the pruning being done: a column returning two cells (a family whose VERSIONS
an operator lowered, a file from elsewhere) makes :func:`get_row` and :func:`scan_page` answer
None, and the caller (``reads.py``) reads that row or page the general way, whose answer is
the reference.  ``keys_examined`` and ``values_loaded`` of :class:`~.reads.ReadStats` both count
the cells such a query returned (SQLite skips invisible ones in the index, values unread).
"""

import itertools
import operator

from ..schema.specs import FOREVER
from .codec import SQL_DECODES, SQL_VALUE

#: shapes of a row's answer: ``[(family, qualifier, ts, value)]``, ``{b"family:qualifier":
#: value}``, ``{b"family:qualifier": (value, ts)}``
CELLS, VALUES, VALUES_TS = "cells", "values", "values_ts"

_KEY = "CAST(fam || X'3A' || qual AS BLOB)"  # byte for byte (concatenation copies the bytes)
_SELECT = {CELLS: f"fam, qual, ts, {SQL_VALUE}", VALUES: f"{_KEY}, {SQL_VALUE}",
           VALUES_TS: f"{_KEY}, {SQL_VALUE}, ts"}
_ORDER = "ORDER BY fam, qual, ts DESC"  # the cells_key index's order: no sort
#: rows of a multi-row get per query (well under SQLite's bound on a statement's parameters)
ROWS_PER_QUERY = 500
#: index seeks of a multi-row get (rows x qualifiers) from which it first looks which rows exist
PROBES_WORTH_A_CHECK = 2000


def family_clauses(select):
    """``[(sql, args)]``, one per selected family in family order: ``fam=?`` or ``fam=? AND
    qual IN (…)``.  ``select``: ``{family: set of qualifiers | None}`` (None = whole family)."""
    clauses = []
    for fam in sorted(select):
        quals = select[fam]
        if quals is None:
            clauses.append(("fam=?", (fam,)))
        else:
            quals = sorted(quals)
            clauses.append((f"fam=? AND qual IN ({','.join('?' * len(quals))})", (fam, *quals)))
    return clauses


def plan(info, select, timestamp, versions, ts_now):
    """``[(sql, args)]`` of a qualifying read (see the module docstring), else None.

    One clause per family selected (each one indexed seek in a get), or for a whole-row read
    (``select`` None) one clause naming the table's families (a family dropped from the catalog
    leaves cells behind until compaction), each with the read's time range and TTLs.
    """
    families = list(info.families) if select is None else sorted(select)
    specs = [info.families.get(fam) for fam in families]
    if versions < 1 or not families or any(spec is None or spec.versions != 1 for spec in specs):
        return None
    upper = [("ts < ?", timestamp)] if timestamp is not None else []
    if select is None:
        sql = [f"fam IN ({','.join('?' * len(families))})"]
        args = list(families)
        for fam, spec in zip(families, specs):
            if spec.ttl < FOREVER:
                sql.append("(fam <> ? OR ts > ?)")
                args += [fam, ts_now - spec.ttl * 1000]
        for clause, arg in upper:
            sql.append(clause)
            args.append(arg)
        return [(" AND ".join(sql), tuple(args))]
    clauses = []
    for (clause, args), spec in zip(family_clauses(select), specs):
        limits = list(upper)
        if spec.ttl < FOREVER:
            limits.append(("ts > ?", ts_now - spec.ttl * 1000))
        clauses.append((" AND ".join([clause] + [sql for sql, _arg in limits]),
                        args + tuple(arg for _sql, arg in limits)))
    return clauses


class Reader:
    """Reads of one :func:`plan` in one ``shape`` on ``conn``, counting what they return."""

    def __init__(self, conn, clauses, shape):
        self.conn, self.clauses, self.shape = conn, clauses, shape
        self.cells = self.nbytes = 0
        SQL_DECODES.shrink, SQL_DECODES.error = 0, None

    def get_row(self, row):
        """The answer for ``row``: its cells in ``shape`` (empty when none is visible), or None
        when a column returned two cells."""
        found = []
        for clause, args in self.clauses:
            found += self._execute(
                f"SELECT {_SELECT[self.shape]} FROM cells WHERE row=? AND {clause} {_ORDER}",
                (row, *args))
        return self._answer(found)

    def get_rows(self, rows):
        """``{row: answer}`` of :meth:`get_row` for many rows, in one query per family clause
        (``row IN (…)``, up to :data:`ROWS_PER_QUERY` rows a query): a multi-row get costs its
        Python per query, not per row.  A row with no visible cell answers empty.

        SQLite answers ``row IN (…) AND qual IN (…)`` with one index seek per row and qualifier,
        whether the row exists or not: when that is :data:`PROBES_WORTH_A_CHECK` seeks or more,
        one seek a row first finds the rows that exist (a month of process-type rankings read
        for 50 signatures names 480 rows, half of them never written)."""
        found = {row: [] for row in rows}
        unique = list(found)
        probes = sum(clause.partition(" IN (")[2].partition(")")[0].count("?") for clause, _args in self.clauses)
        if len(unique) > 1 and probes and len(unique) * probes >= PROBES_WORTH_A_CHECK:
            unique = self._existing(unique)
        for start in range(0, len(unique), ROWS_PER_QUERY):
            chunk = unique[start:start + ROWS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            for clause, args in self.clauses:
                result = self._execute(f"SELECT row, {_SELECT[self.shape]} FROM cells WHERE row IN ({marks}) "
                                       f"AND {clause} ORDER BY row, fam, qual, ts DESC", (*chunk, *args))
                rest = operator.itemgetter(*range(1, len(result[0]))) if result else None  # all but the row
                for row, cells in itertools.groupby(result, operator.itemgetter(0)):
                    found[bytes(row)] += map(rest, cells)
        return {row: self._answer(cells) for row, cells in found.items()}

    def _existing(self, rows):
        """The rows of ``rows`` with a cell (visible or not), in order: one seek a row."""
        out = []
        for start in range(0, len(rows), ROWS_PER_QUERY):
            chunk = rows[start:start + ROWS_PER_QUERY]
            values = ",".join(["(?)"] * len(chunk))
            out += [bytes(row) for (row,) in self.conn.execute(
                f"SELECT v.column1 FROM (VALUES {values}) AS v WHERE EXISTS "
                "(SELECT 1 FROM cells WHERE cells.row = v.column1)", chunk)]
        return out

    def scan_page(self, first, last):
        """``[(row, cells)]`` of the rows in ``[first, last]`` with a visible cell, or None
        when a column returned two cells."""
        where = " OR ".join(f"({clause})" for clause, _args in self.clauses)
        args = [arg for _clause, clause_args in self.clauses for arg in clause_args]
        found = self._execute(f"SELECT row, {_SELECT[self.shape]} FROM cells WHERE row >= ? "
                              f"AND row <= ? AND ({where}) ORDER BY row, fam, qual, ts DESC",
                              (first, last, *args))
        rest = operator.itemgetter(*range(1, len(found[0]))) if found else None  # all but the row
        page = []
        for row, cells in itertools.groupby(found, operator.itemgetter(0)):
            cells = self._answer(list(map(rest, cells)))
            if cells is None:
                return None
            page.append((bytes(row), cells))
        return page

    def finish(self, stats):
        """Add what the reads returned to ``stats`` (stored bytes: decoded ones, plus what
        compression saved)."""
        stats.add(self.cells, self.cells, self.nbytes + SQL_DECODES.shrink)

    def _execute(self, sql, args):
        try:
            return self.conn.execute(sql, args).fetchall()
        except Exception:
            error, SQL_DECODES.error = SQL_DECODES.error, None
            if error is not None:  # cell_value's own error, not SQLite's report of it
                raise error from None
            raise

    def _answer(self, found):
        """The row's cells in ``shape`` from the query's rows, or None if a column repeats."""
        self.cells += len(found)
        if self.shape == VALUES:
            cells = dict(found)
            self.nbytes += sum(map(len, cells.values()))
            return cells if len(cells) == len(found) else None
        if self.shape == VALUES_TS:
            keys, values, stamps = zip(*found) if found else ((), (), ())
            self.nbytes += sum(map(len, values))
            cells = dict(zip(keys, zip(values, stamps)))
            return cells if len(cells) == len(found) else None
        quals = [cell[1] for cell in found]
        # Adjacent equal qualifiers are rare (a column's repeat, or one qualifier in two
        # families): only those positions are compared in Python.
        for i in itertools.compress(itertools.count(), map(operator.eq, quals, quals[1:])):
            if found[i][0] == found[i + 1][0]:
                return None
        self.nbytes += sum(map(len, map(operator.itemgetter(3), found)))
        return found
