"""Reads of the engine: which cells a get or a scan returns, and loading only their values.

A read happens in two steps inside one read transaction (so both see the same snapshot):

1. **Keys.** The requested columns and families are pushed into the SQL, and only
   ``(family, qualifier, ts, rowid)`` is selected.  These come from the ``cells_key`` index
   alone (it holds every one of them, rowid included), so no value is touched, however big.
   A get seeks each requested family (and qualifiers) of the row in the index: its cost depends
   on the cells asked for, not on how wide the row is.
2. **Values.** The read rules (time range, TTL, the family's VERSIONS and the read's
   ``versions``) pick the winners from the keys alone; then only the winners' values are read
   by rowid and decoded.

So a value that a read does not return (another column, an older version, an expired cell) is
never loaded nor decompressed.  :class:`ReadStats` counts what the reads examined and loaded,
so tests and benchmarks can check it.
"""

import threading

from ..schema.specs import FOREVER
from . import codec

_IN_CHUNK = 500  # rowids per value query, well under SQLite's parameter limit


class ReadStats:
    """Counters of what reads took from SQLite since the engine opened (thread-safe).

    ``keys_examined``: index entries (cell keys) read; ``values_loaded``: cells whose value was
    read; ``value_bytes``: stored (possibly compressed) bytes of those values.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.keys_examined = self.values_loaded = self.value_bytes = 0

    def add(self, keys, values, nbytes):
        with self._lock:
            self.keys_examined += keys
            self.values_loaded += values
            self.value_bytes += nbytes

    def snapshot(self):
        with self._lock:
            return {"keys_examined": self.keys_examined, "values_loaded": self.values_loaded,
                    "value_bytes": self.value_bytes}


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


def get_rows(conn, info, rows, select, timestamp, versions, ts_now, stats):
    """``[(row, cells)]`` for ``rows`` in request order; rows with no visible cell omitted."""
    with _snapshot(conn):
        winners = []  # (row, [(fam, qual, ts, rowid)])
        examined = 0
        for row in rows:
            keys = []
            if select is None:
                keys = conn.execute("SELECT fam, qual, ts, rowid FROM cells WHERE row=? "
                                    "ORDER BY fam, qual, ts DESC", (row,)).fetchall()
            else:
                # One indexed seek per family: an OR of families would walk the whole row.
                for clause, args in family_clauses(select):
                    keys.extend(conn.execute(
                        f"SELECT fam, qual, ts, rowid FROM cells WHERE row=? AND {clause} "
                        "ORDER BY fam, qual, ts DESC", (row, *args)))
            examined += len(keys)
            cells = _visible(info, keys, timestamp, versions, ts_now)
            if cells:
                winners.append((row, cells))
        out = _with_values(conn, winners, stats)
    stats.add(examined, 0, 0)
    return out


def scan_page(conn, info, first, last, select, timestamp, versions, ts_now, stats):
    """``[(row, cells)]`` of the rows in ``[first, last]`` (ascending), rows with no visible
    cell omitted."""
    where, args = "row >= ? AND row <= ?", [first, last]
    if select is not None:
        where += " AND (" + " OR ".join(f"({c})" for c, _a in family_clauses(select)) + ")"
        for _c, a in family_clauses(select):
            args.extend(a)
    with _snapshot(conn):
        cur = conn.execute(f"SELECT row, fam, qual, ts, rowid FROM cells WHERE {where} "
                           "ORDER BY row, fam, qual, ts DESC", args)
        winners, examined, current, keys = [], 0, None, None
        grouped = []
        for row, fam, qual, ts, rowid in cur:
            examined += 1
            if row != current:
                current, keys = row, []
                grouped.append((bytes(row), keys))
            keys.append((fam, qual, ts, rowid))
        for row, keys in grouped:
            cells = _visible(info, keys, timestamp, versions, ts_now)
            if cells:
                winners.append((row, cells))
        out = _with_values(conn, winners, stats)
    stats.add(examined, 0, 0)
    return out


class _snapshot:
    """A read transaction on ``conn`` (autocommit otherwise), so keys and values agree."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN")

    def __exit__(self, *exc):
        self.conn.execute("COMMIT")


def _visible(info, keys, timestamp, versions, ts_now):
    """Apply the read time range, TTL and versions to one row's keys (sorted by family,
    qualifier, newest first): the winners ``[(fam, qual, ts, rowid)]``."""
    out = []
    last, seen = None, 0
    for fam, qual, ts, rowid in keys:
        fam, qual = bytes(fam), bytes(qual)
        spec = info.families.get(fam)
        if spec is None:  # a dropped family's cells linger until compaction
            continue
        if timestamp is not None and ts >= timestamp:
            continue
        if spec.ttl < FOREVER and ts <= ts_now - spec.ttl * 1000:
            continue
        key = (fam, qual)
        if key != last:
            last, seen = key, 0
        seen += 1
        if seen > min(versions, spec.versions):
            continue
        out.append((fam, qual, ts, rowid))
    return out


def _with_values(conn, winners, stats):
    """Replace each winner's rowid by its decoded value (read by rowid, a few hundred a query)."""
    rowids = [cell[3] for _row, cells in winners for cell in cells]
    values, nbytes = {}, 0
    for i in range(0, len(rowids), _IN_CHUNK):
        chunk = rowids[i:i + _IN_CHUNK]
        for rowid, cell_codec, stored in conn.execute(
                f"SELECT rowid, codec, value FROM cells WHERE rowid IN ({','.join('?' * len(chunk))})",
                chunk):
            nbytes += len(stored)
            values[rowid] = codec.decode(cell_codec, stored)
    stats.add(0, len(values), nbytes)
    return [(row, [(fam, qual, ts, values[rowid]) for fam, qual, ts, rowid in cells])
            for row, cells in winners]
