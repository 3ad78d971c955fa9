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
never loaded nor decompressed.  When no stored cell of the columns read can lose (no read time
range, no TTL, and the read's ``versions`` at least the families' VERSIONS, which puts already
prune to), the keys and values come in one query instead: the same cells are loaded, and a
whole-row scan stays as fast as a one-step read.  :class:`ReadStats` counts what the reads
examined and loaded, so tests and benchmarks can check it.
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
    cols = _columns(info, select, timestamp, versions)
    with _snapshot(conn):
        winners = []  # (row, [(fam, qual, ts, rowid | value)])
        examined, loaded = 0, [0]
        for row in rows:
            keys = []
            if select is None:
                keys = conn.execute(f"SELECT fam, qual, ts, {cols} FROM cells WHERE row=? "
                                    "ORDER BY fam, qual, ts DESC", (row,)).fetchall()
            else:
                # One indexed seek per family: an OR of families would walk the whole row.
                for clause, args in family_clauses(select):
                    keys.extend(conn.execute(
                        f"SELECT fam, qual, ts, {cols} FROM cells WHERE row=? AND {clause} "
                        "ORDER BY fam, qual, ts DESC", (row, *args)))
            examined += len(keys)
            cells = _visible(info, keys, timestamp, versions, ts_now, loaded)
            if cells:
                winners.append((row, cells))
        out = _with_values(conn, winners, stats, loaded)
    stats.add(examined, 0, 0)
    return out


class Cells(list):
    """A row's cells, read with named qualifiers for the families in ``explicit_families``.

    HBase scans such a family with an ExplicitColumnTracker, which a filter can tell apart
    (``gateway.filters.apply_filter``: the empty qualifier's versions)."""

    def __init__(self, cells, explicit_families):
        super().__init__(cells)
        self.explicit_families = explicit_families


def scan_page(conn, info, first, last, select, timestamp, versions, ts_now, stats):
    """``[(row, cells)]`` of the rows in ``[first, last]`` (ascending), rows with no visible
    cell omitted.  With families selected by qualifier, ``cells`` is a :class:`Cells`."""
    cols = _columns(info, select, timestamp, versions)
    where, args = "row >= ? AND row <= ?", [first, last]
    if select is not None:
        clauses = family_clauses(select)
        where += " AND (" + " OR ".join(f"({clause})" for clause, _args in clauses) + ")"
        for _clause, clause_args in clauses:
            args.extend(clause_args)
    with _snapshot(conn):
        cur = conn.execute(f"SELECT row, fam, qual, ts, {cols} FROM cells WHERE {where} "
                           "ORDER BY row, fam, qual, ts DESC", args)
        grouped, current, keys = [], None, None
        for cell in cur:
            if cell[0] != current:
                current, keys = cell[0], []
                grouped.append((bytes(current), keys))
            keys.append(cell)
        examined = sum(len(keys) for _row, keys in grouped)
        winners, loaded = [], [0]
        for row, keys in grouped:
            cells = _visible(info, keys, timestamp, versions, ts_now, loaded, at=1)
            if cells:
                winners.append((row, cells))
        out = _with_values(conn, winners, stats, loaded)
    stats.add(examined, 0, 0)
    explicit = frozenset(fam for fam, quals in (select or {}).items() if quals is not None)
    if explicit:
        out = [(row, Cells(cells, explicit)) for row, cells in out]
    return out


def _columns(info, select, timestamp, versions):
    """What to select beside the keys: ``codec, value`` when every stored cell of the families
    read is returned (so loading them at once loads nothing extra), else ``rowid``."""
    families = info.families if select is None else [f for f in select if f in info.families]
    if timestamp is None and all(info.families[f].ttl >= FOREVER and versions >= info.families[f].versions
                                 for f in families):
        return "codec, value"
    return "rowid"


class _snapshot:
    """A read transaction on ``conn`` (autocommit otherwise), so keys and values agree."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN")

    def __exit__(self, *exc):
        self.conn.execute("COMMIT")


def _visible(info, keys, timestamp, versions, ts_now, loaded, at=0):
    """Apply the read time range, TTL and versions to one row's keys (sorted by family,
    qualifier, newest first; each key's family is at index ``at``).  The winners come back as
    ``(fam, qual, ts, rowid)``, or decoded ``(fam, qual, ts, value)`` when the key query
    brought ``codec, value`` (their stored bytes then add to ``loaded[0]``)."""
    out = []
    last, seen = None, 0
    for cell in keys:
        fam, qual, ts = bytes(cell[at]), bytes(cell[at + 1]), cell[at + 2]
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
        if len(cell) - at == 4:
            out.append((fam, qual, ts, cell[at + 3]))
        else:
            loaded[0] += len(cell[at + 4])
            out.append((fam, qual, ts, codec.decode(cell[at + 3], cell[at + 4])))
    return out


def _with_values(conn, winners, stats, loaded):
    """The winners with decoded values: read by rowid (a few hundred a query) unless the
    key query brought them (``loaded``: their stored bytes)."""
    rowids = [cell[3] for _row, cells in winners for cell in cells if isinstance(cell[3], int)]
    values, nbytes, count = {}, loaded[0], 0
    for i in range(0, len(rowids), _IN_CHUNK):
        chunk = rowids[i:i + _IN_CHUNK]
        for rowid, cell_codec, stored in conn.execute(
                f"SELECT rowid, codec, value FROM cells WHERE rowid IN ({','.join('?' * len(chunk))})",
                chunk):
            values[rowid] = codec.decode(cell_codec, stored)
            nbytes += len(stored)
    out = []
    for row, cells in winners:
        if values:  # rowids, not values (one read never mixes the two)
            cells = [(fam, qual, ts, values[rowid]) for fam, qual, ts, rowid in cells]
        count += len(cells)
        out.append((row, cells))
    stats.add(0, count, nbytes)
    return out
