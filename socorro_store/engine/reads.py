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

The common read, the newest version of families keeping one version, skips both steps: one
query returns exactly the answer (``direct_reads.py``), unless a column there holds two cells,
and then that row (or scan page) is read the general way above.  ``DIRECT = False`` sends every
read the general way (tests compare the two).
"""

import threading

from ..schema.specs import FOREVER
from . import codec
from .direct_reads import CELLS, VALUES, VALUES_TS, Reader, family_clauses, plan

_IN_CHUNK = 500  # rowids per value query, well under SQLite's parameter limit
DIRECT = True  # read one-version families in one query (direct_reads.py) when a read allows


class ReadStats:
    """Counters of what reads took from SQLite since the engine opened (thread-safe).

    ``keys_examined``: index entries (cell keys) read; ``values_loaded``: cells whose value was
    read; ``value_bytes``: stored (possibly compressed) bytes of those values.  A one-query read
    (``direct_reads.py``) counts the cells its query returned as both examined and loaded.
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


def get_rows(conn, info, rows, select, timestamp, versions, ts_now, stats, shape=CELLS):
    """``[(row, cells)]`` for ``rows`` in request order; rows with no visible cell omitted.

    ``cells`` in ``shape`` (``direct_reads``): ``CELLS``, a list of ``(fam, qual, ts, value)``,
    newest first in each column; ``VALUES`` / ``VALUES_TS``, a dict by ``b"fam:qual"``."""
    clauses = plan(info, select, timestamp, versions, ts_now) if DIRECT else None
    with _snapshot(conn):
        if clauses is None:
            return _shaped(_get_rows(conn, info, rows, select, timestamp, versions, ts_now, stats), shape)
        reader = Reader(conn, clauses, shape)
        answers = reader.get_rows(rows) if len(rows) > 1 else {row: reader.get_row(row) for row in rows}
        out = []
        for row in rows:
            cells = answers[row]
            if cells is None:  # read the general way: a column there holds two cells
                found = _shaped(_get_rows(conn, info, [row], select, timestamp, versions, ts_now,
                                          stats), shape)
                cells = found[0][1] if found else None
            if cells:
                out.append((row, cells))
        reader.finish(stats)
    return out


def _get_rows(conn, info, rows, select, timestamp, versions, ts_now, stats):
    """:func:`get_rows` the general way (in the caller's read transaction), in ``CELLS``."""
    cols = _columns(info, select, timestamp, versions)
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


def scan_page(conn, info, first, last, select, timestamp, versions, ts_now, stats, shape=CELLS):
    """``[(row, cells)]`` of the rows in ``[first, last]`` (ascending), rows with no visible
    cell omitted; ``cells`` in ``shape`` (see :func:`get_rows`).  With families selected by
    qualifier, ``CELLS`` come as a :class:`Cells`."""
    clauses = plan(info, select, timestamp, versions, ts_now) if DIRECT else None
    with _snapshot(conn):
        out = None
        if clauses is not None:
            reader = Reader(conn, clauses, shape)
            out = reader.scan_page(first, last)
            reader.finish(stats)
        if out is None:  # the general way (or a column in the page holds two cells)
            out = _shaped(_scan_page(conn, info, first, last, select, timestamp, versions, ts_now,
                                     stats), shape)
    explicit = frozenset(fam for fam, quals in (select or {}).items() if quals is not None)
    if explicit and shape == CELLS:
        out = [(row, Cells(cells, explicit)) for row, cells in out]
    return out


def _scan_page(conn, info, first, last, select, timestamp, versions, ts_now, stats):
    """:func:`scan_page` the general way (in the caller's read transaction), in ``CELLS``."""
    cols = _columns(info, select, timestamp, versions)
    where, args = "row >= ? AND row <= ?", [first, last]
    if select is not None:
        clauses = family_clauses(select)
        where += " AND (" + " OR ".join(f"({clause})" for clause, _args in clauses) + ")"
        for _clause, clause_args in clauses:
            args.extend(clause_args)
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
    return out


def _shaped(found, shape):
    """``[(row, cells)]`` of ``CELLS`` in ``shape``."""
    if shape == VALUES:
        return [(row, {fam + b":" + qual: value for fam, qual, _ts, value in cells}) for row, cells in found]
    if shape == VALUES_TS:
        return [(row, {fam + b":" + qual: (value, ts) for fam, qual, ts, value in cells})
                for row, cells in found]
    return found


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
