"""Engine: HBase's data rules on SQLite.

Data model (``reference/hbase-thrift1-semantics.md`` §8):

* a cell is (row, family, qualifier, ts) -> value; rewriting the same ts replaces the value;
* a family keeps its VERSIONS newest versions per column (older ones are pruned at write);
* cells older than the family's TTL are invisible, and dropped by :meth:`Engine.compact`;
* deletes remove cells with ``ts <= T`` and leave a marker, so a later put with ``ts <= T`` stays
  invisible (HBase's "deletes mask puts") until :meth:`Engine.compact` drops the markers;
* counters are 8-byte big-endian signed values; an increment (or append) is a read plus a put
  at ``max(old ts, now)``: in the millisecond of the stored version it replaces that version
  (the equal-timestamp rule, as a put does), so a ``counter_set`` followed by an increment in
  the same millisecond counts from the value set.  Bigtable stamps increments the same way
  (``reference/bigtable-emulator.md`` #6).  HBase 2's HRegion writes ``max(old ts + 1, now)``
  (reference §5): under several increments a millisecond that runs ahead of the clock, and a
  put at "now" then stays hidden behind it; issue 15 chose the rule that keeps the put.
* reads fetch only the requested columns and only the returned cells' values (``reads.py``);
* reads with a timestamp select ``ts < timestamp``.

Families are ``bytes``; cells come back as ``(family, qualifier, ts, value)`` tuples sorted by
family, qualifier and newest ts first.  Rows sort by unsigned bytes (SQLite compares BLOBs with
memcmp).

Thread-safety: each table has one write connection guarded by a lock; a read borrows a connection
from the table's bounded pool (``pool.py``) for one get or one page of a scan, so the open
connections do not grow with the number of threads, and a scan paused between pages (a gateway
scanner between fetches) holds none.  Several processes may share a directory (SQLite's own locking serialises writers), but the
intended way to share it is ``socorro-store serve``.  One background thread per engine checkpoints
the tables' write-ahead logs (``checkpointer.py``); :meth:`Engine.close` stops it.
"""

import contextlib
import os
import sqlite3
import struct
import threading
import time

from ..errors import FamilyNotFound, InvalidArgument, NotACounter, TableDisabled
from ..schema.specs import FOREVER
from . import codec
from .catalog import COLUMN_MARKER, FAMILY_MARKER, Catalog, connect
from .checkpointer import COMMIT_BYTES, TRIGGER_BYTES, Checkpointer
from .direct_reads import CELLS
from .pool import DEFAULT_MAX_OPEN, READER_CACHE_KIB, WRITER_CACHE_KIB, ReaderPool, cap_page_cache
from .pruning import crowded, prune
from .reads import ReadStats, get_rows, scan_page

_COUNTER = struct.Struct(">q")


def now_ms():
    return int(time.time() * 1000)


class _Table:
    """Open connections of one table file."""

    def __init__(self, path, sync, checkpointer=None, max_readers=DEFAULT_MAX_OPEN):
        self.path = path
        self.sync = sync
        self.write_lock = threading.Lock()
        self.writer = cap_page_cache(connect(path, sync), WRITER_CACHE_KIB)  # bounded memory (pool.py)
        self.readers = ReaderPool(lambda: connect(path, sync), max_readers)  # caches capped there
        self.checkpointer = checkpointer
        self.uncheckpointed = 0  # estimated bytes committed since the last checkpoint request
        self.checkpoint_lock = threading.Lock()
        self.checkpoint_conn = None
        self.closed = False

    def read(self):
        """A read connection for one read: ``with table.read() as conn``."""
        return self.readers.connection()

    def reader(self):
        """The connection the next read borrows if no other read runs meanwhile (the pool's most
        recently returned one), for tests that instrument a read (a SQLite progress handler)."""
        with self.readers.connection() as conn:
            return conn

    @contextlib.contextmanager
    def transaction(self, size_hint=0):
        """The write connection inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error).

        ``size_hint``: about how many bytes of values the transaction writes, to schedule
        background checkpoints (see checkpointer.py).
        """
        with self.write_lock:
            self.writer.execute("BEGIN IMMEDIATE")
            try:
                yield self.writer
                self.writer.execute("COMMIT")
            except BaseException:
                self.writer.execute("ROLLBACK")
                raise
            self.uncheckpointed += size_hint + COMMIT_BYTES
            if self.uncheckpointed >= TRIGGER_BYTES and self.checkpointer is not None:
                self.uncheckpointed = 0
                self.checkpointer.request(self)

    def checkpoint(self, rounds=8):
        """PASSIVE checkpoints on a connection of its own (run by the checkpointer thread).

        Repeated while the writer keeps appending, so the log gets fully copied in a pause
        between commits: only then does SQLite restart it from the beginning (else it grows to
        the ``wal_autocheckpoint`` bound, and the writer checkpoints after all).
        """
        with self.checkpoint_lock:
            if self.closed:
                return
            if self.checkpoint_conn is None:
                self.checkpoint_conn = cap_page_cache(connect(self.path, self.sync), READER_CACHE_KIB)
            previous = None
            for _ in range(rounds):  # until a round finds no frames appended during the last
                busy, frames, _copied = self.checkpoint_conn.execute(
                    "PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
                if busy or frames == previous:
                    return
                previous = frames

    def close(self):
        with self.checkpoint_lock:  # waits for a checkpoint in progress
            self.closed = True
            if self.checkpoint_conn is not None:
                self.checkpoint_conn.close()
        self.readers.close()
        with self.write_lock:
            self.writer.close()


class Engine:
    """A directory of SQLite files holding wide-column tables with HBase semantics."""

    def __init__(self, directory, sync="normal", create=True, max_readers=DEFAULT_MAX_OPEN):
        """``max_readers``: read connections per table open at most (reads beyond wait)."""
        self.directory = directory
        self.sync = sync
        self.max_readers = max_readers
        self.catalog = Catalog(directory, sync, create)
        self._open = {}
        self._open_lock = threading.Lock()
        self._closed = False
        self._checkpointer = Checkpointer()
        self.read_stats = ReadStats()  # what reads took from SQLite (see reads.py)

    def close(self):
        self._checkpointer.close()
        with self._open_lock:
            if self._closed:
                return
            self._closed = True
            for table in self._open.values():
                table.close()
            self._open.clear()
        self.catalog.close()

    # -- admin -------------------------------------------------------------------------------
    def create_table(self, name, families, extras=None):
        """Create ``name`` with ``families`` (FamilySpec list).  Raises TableExists."""
        if not families:
            raise InvalidArgument("a table needs at least one family")
        self.catalog.add(name, families, extras or {}, now_ms())

    def drop_table(self, name):
        info = self.catalog.get(name)
        with self._open_lock:
            table = self._open.pop(info.file, None)
        if table is not None:
            table.close()
        self.catalog.remove(name)

    def table_names(self):
        return self.catalog.names()

    def families(self, name):
        """``{family bytes: FamilySpec}`` of ``name`` in creation order."""
        return dict(self.catalog.get(name).families)

    def family_extras(self, name):
        return dict(self.catalog.get(name).extra)

    def set_enabled(self, name, enabled):
        self.catalog.set_enabled(name, enabled)

    def is_enabled(self, name):
        return self.catalog.get(name).enabled

    def _table(self, name, check_enabled=True):
        info = self.catalog.get(name)
        if check_enabled and not info.enabled:
            raise TableDisabled(f"table {name} is disabled.")
        table = self._open.get(info.file)
        if table is None:
            with self._open_lock:
                table = self._open.get(info.file)
                if table is None:
                    table = _Table(self.catalog.path_of(info), self.sync, self._checkpointer,
                                   self.max_readers)
                    self._open[info.file] = table
        return info, table

    @staticmethod
    def _family(info, family):
        spec = info.families.get(family)
        if spec is None:
            raise FamilyNotFound(f"Column family {family.decode('utf-8', 'replace')} does not exist "
                                 f"in table {info.name}")
        return spec

    # -- writes ------------------------------------------------------------------------------
    def mutate(self, name, mutations, timestamp=None):
        """Apply ``[(row, puts, deletes, delete_row)]`` in one transaction.

        ``puts``: ``[(family, qualifier, value)]``; ``deletes``: ``[(family, qualifier|None)]``
        (None = whole family).  Every row's puts go before its deletes.  Families are checked
        before anything is written.
        """
        info, table = self._table(name)
        families, encode, raw = info.families, codec.encode, codec.RAW
        # Validate and compress before taking the write lock: zlib releases the GIL, so other
        # writers' compression overlaps this table's SQLite work.  Uncompressed families skip
        # the codec call: their values are stored as given.
        encoded = []
        size = 0
        for row, puts, deletes, _delete_row in mutations:
            for fam, qual, value in puts:
                spec = families.get(fam) or self._family(info, fam)
                cell_codec, stored = encode(value, True) if spec.compressed else (raw, value)
                encoded.append((row, fam, qual, spec.versions - 1, cell_codec, stored))
                size += len(stored)
            for fam, _qual in deletes:
                self._family(info, fam)
        with table.transaction(size) as conn:
            ts_now = now_ms()
            write_ts = ts_now if timestamp is None else timestamp
            masked = _MarkerCache(conn)
            if masked.any:
                encoded = [cell for cell in encoded if not masked(cell[0], cell[1], cell[2], write_ts)]
            prunes = crowded(conn, [cell[:4] for cell in encoded])  # counts cells before the puts
            conn.executemany("INSERT OR REPLACE INTO cells (row, fam, qual, ts, codec, value) "
                             "VALUES (?,?,?,?,?,?)",
                             [(row, fam, qual, write_ts, cell_codec, stored)
                              for row, fam, qual, _keep, cell_codec, stored in encoded])
            prune(conn, prunes)
            for row, _puts, deletes, delete_row in mutations:
                targets = [(fam, None) for fam in families] if delete_row else deletes
                for fam, qual in targets:
                    _delete(conn, row, fam, qual, write_ts)

    def increment(self, name, increments):
        """Apply ``[(row, family, qualifier, amount)]`` atomically; return the new values.

        A missing (or deleted, or expired) cell counts as 0.  A cell that is not 8 bytes raises
        :class:`NotACounter` and nothing of the batch is written.
        """
        info, table = self._table(name)
        for _row, fam, _qual, _amount in increments:
            self._family(info, fam)
        results = []
        with table.transaction() as conn:
            ts_now = now_ms()
            for row, fam, qual, amount in increments:
                spec = info.families[fam]
                column = _column(conn, row, fam, qual, spec)
                current = _visible_newest(column, spec, ts_now)
                if current is None:
                    value, ts = amount, ts_now
                else:
                    old = current[1]
                    if len(old) != 8:
                        raise NotACounter(f"Field is not a long, it's {len(old)} bytes wide")
                    value = _wrap(_COUNTER.unpack(old)[0] + amount)
                    ts = max(current[0], ts_now)
                _write_over(conn, column, row, fam, qual, spec.versions, ts, codec.RAW, _COUNTER.pack(value))
                results.append(value)
        return results

    def check_and_put(self, name, row, family, qualifier, expected, puts):
        """If the latest visible cell of family:qualifier equals ``expected``, write ``puts``.

        ``expected`` None or ``b""`` matches a missing cell or an empty value.  The puts get
        ts ``max(now, checked cell ts)``.  Returns True when applied.
        """
        return self.check_and_put_many(name, [(row, family, qualifier, expected, puts)])[0]

    def check_and_put_many(self, name, items):
        """Several independent check-and-puts ``[(row, family, qualifier, expected, puts)]`` in one
        transaction, applied in order; returns one bool per item (as :meth:`check_and_put`)."""
        info, table = self._table(name)
        for _row, family, _qualifier, _expected, puts in items:
            self._family(info, family)
            for fam, _qual, _value in puts:
                self._family(info, fam)
        results = []
        with table.transaction() as conn:
            ts_now = now_ms()
            masked = _MarkerCache(conn)  # this transaction deletes nothing: one cache serves all
            for row, family, qualifier, expected, puts in items:
                current = _latest(conn, row, family, qualifier, info.families[family], ts_now)
                if expected:
                    matched = current is not None and current[1] == expected
                else:
                    matched = current is None or current[1] == b""
                if matched:
                    ts = max(ts_now, current[0]) if current else ts_now
                    self._put_cells(conn, info, row, puts, ts, masked)
                results.append(matched)
        return results

    def append(self, name, row, appends):
        """Append ``[(family, qualifier, delta)]`` to cells; return the new ``(fam, qual, ts, value)``."""
        info, table = self._table(name)
        for fam, _qual, _delta in appends:
            self._family(info, fam)
        out = []
        with table.transaction() as conn:
            ts_now = now_ms()
            masked = _MarkerCache(conn)  # this transaction deletes nothing: one cache serves all
            for fam, qual, delta in appends:
                spec = info.families[fam]
                column = _column(conn, row, fam, qual, spec)
                current = _visible_newest(column, spec, ts_now)
                value = (current[1] if current else b"") + delta
                ts = max(current[0], ts_now) if current else ts_now
                if not masked(row, fam, qual, ts):
                    _write_over(conn, column, row, fam, qual, spec.versions, ts,
                                *codec.encode(value, spec.compressed))
                out.append((fam, qual, ts, value))
        return out

    @staticmethod
    def _put_cells(conn, info, row, puts, ts, masked):
        for fam, qual, value in puts:
            if masked(row, fam, qual, ts):
                continue
            spec = info.families[fam]
            _insert_and_prune(conn, row, fam, qual, spec.versions, ts, *codec.encode(value, spec.compressed))

    # -- reads -------------------------------------------------------------------------------
    def get(self, name, rows, columns=None, timestamp=None, versions=1, shape=CELLS):
        """Read rows: ``[(row, cells)]`` in request order, rows without visible cells omitted.

        ``columns``: None, or ``[(family, qualifier|None)]``.  ``shape`` (``direct_reads``):
        ``CELLS``, cells as ``(family, qualifier, ts, value)``; ``VALUES``, a dict
        ``{b"family:qualifier": value}``; ``VALUES_TS``, ``{b"family:qualifier": (value, ts)}``.
        """
        info, table = self._table(name)
        select = self._selector(info, columns)
        with table.read() as conn:
            return get_rows(conn, info, rows, select, timestamp, versions, now_ms(), self.read_stats,
                            shape)

    def get_each(self, name, columns_by_row, shape=CELLS):
        """Read each row's own columns (``{row: [(family, qualifier)]}``), newest versions, on
        one read connection: ``[(row, cells)]`` as :meth:`get` (rows sharing a column list in
        one query, so a read probes only the cells asked, not every row times every column)."""
        info, table = self._table(name)
        groups = {}
        for row, columns in columns_by_row.items():
            groups.setdefault(frozenset(columns), []).append(row)
        selects = {columns: self._selector(info, sorted(columns)) for columns in groups}
        out = []
        with table.read() as conn:
            for columns, rows in groups.items():
                out += get_rows(conn, info, rows, selects[columns], None, 1, now_ms(), self.read_stats, shape)
        return out

    def scan(self, name, low=None, high=None, reverse=False, columns=None, timestamp=None,
             versions=1, page_size=1000, low_inclusive=True, high_inclusive=False, shape=CELLS):
        """Yield ``(row, cells)`` for rows between ``low`` and ``high``, ascending or descending
        (``cells`` in ``shape``, as :meth:`get`).

        Bounds are inclusive or exclusive as flagged; None is unbounded.  Rows are read
        ``page_size`` at a time, so memory stays bounded whatever the range.  Each page borrows
        a read connection and returns it before its rows are yielded: a paused scan holds no
        connection, and may be resumed on any thread.
        """
        info, table = self._table(name)
        select = self._selector(info, columns)
        order = "DESC" if reverse else "ASC"
        while True:
            where, args = [], []
            if low is not None:
                where.append("row >= ?" if low_inclusive else "row > ?")
                args.append(low)
            if high is not None:
                where.append("row <= ?" if high_inclusive else "row < ?")
                args.append(high)
            clause = ("WHERE " + " AND ".join(where)) if where else ""
            with table.read() as conn:  # returned before the first yield (see above)
                keys = [r[0] for r in conn.execute(
                    f"SELECT DISTINCT row FROM cells {clause} ORDER BY row {order} LIMIT ?",
                    (*args, page_size))]
                if not keys:
                    return
                first, last = (keys[-1], keys[0]) if reverse else (keys[0], keys[-1])
                page = scan_page(conn, info, first, last, select, timestamp, versions, now_ms(),
                                 self.read_stats, shape)
            if reverse:
                page.reverse()
            yield from page
            if len(keys) < page_size:
                return
            if reverse:
                high, high_inclusive = keys[-1], False
            else:
                low, low_inclusive = keys[-1], False

    def check_columns(self, name, columns):
        """Raise TableNotFound / FamilyNotFound now for a read that would fail later."""
        self._selector(self._table(name)[0], columns)

    def _selector(self, info, columns):
        """Turn ``[(family, qualifier|None)]`` into ``{family: set of qualifiers | None}``."""
        if not columns:
            return None
        select = {}
        for fam, qual in columns:
            self._family(info, fam)
            if qual is None:
                select[fam] = None
            elif fam not in select or select[fam] is not None:
                select.setdefault(fam, set()).add(qual)
        return select

    # -- maintenance -------------------------------------------------------------------------
    def compact(self, name):
        """Major compaction: drop expired and over-VERSIONS cells and every delete marker."""
        info, table = self._table(name, check_enabled=False)
        ts_now = now_ms()
        with table.transaction() as conn:
            for fam, spec in info.families.items():
                if spec.ttl < FOREVER:
                    conn.execute("DELETE FROM cells WHERE fam=? AND ts <= ?",
                                 (fam, ts_now - spec.ttl * 1000))
                conn.execute(
                    "DELETE FROM cells WHERE fam=? AND (row, qual, ts) IN ("
                    " SELECT row, qual, ts FROM (SELECT row, qual, ts, ROW_NUMBER() OVER"
                    " (PARTITION BY row, qual ORDER BY ts DESC) AS n FROM cells WHERE fam=?)"
                    " WHERE n > ?)", (fam, fam, spec.versions))
            conn.execute("DELETE FROM cells WHERE fam NOT IN (%s)" % ",".join("?" * len(info.families)),
                         tuple(info.families))
            conn.execute("DELETE FROM markers")
        with table.write_lock:
            table.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity_check(self):
        """Run SQLite's integrity check on every file; return a list of problems (empty = fine)."""
        problems = []
        for name in self.table_names():
            info, table = self._table(name, check_enabled=False)
            try:
                with table.read() as conn:
                    result = conn.execute("PRAGMA integrity_check").fetchall()
            except sqlite3.DatabaseError as exc:  # a badly damaged file fails the check itself
                result = [(str(exc),)]
            if result != [("ok",)]:
                problems.append(f"{name}: {result}")
        return problems

    def reader_connections(self, in_use=False):
        """Read connections open (``in_use``: borrowed by a read right now) over all tables."""
        with self._open_lock:
            tables = list(self._open.values())
        return sum(table.readers.counts()[1 if in_use else 0] for table in tables)

    def file_paths(self):
        return [os.path.join(self.catalog.directory, "catalog.sqlite")] + [
            self.catalog.path_of(self.catalog.get(n)) for n in self.table_names()]


# -- helpers ---------------------------------------------------------------------------------

class _MarkerCache:
    """Answers "is a put at (row, fam, qual, ts) masked by a delete marker?" for one transaction.

    Most tables have no markers; then this costs a single query per transaction.
    """

    def __init__(self, conn):
        self.conn = conn
        self.any = conn.execute("SELECT EXISTS(SELECT 1 FROM markers)").fetchone()[0]
        self.rows = {}

    def __call__(self, row, fam, qual, ts):
        if not self.any:
            return False
        key = (row, fam)
        markers = self.rows.get(key)
        if markers is None:
            markers = {(kind, bytes(q)): mts for kind, q, mts in self.conn.execute(
                "SELECT kind, qual, ts FROM markers WHERE row=? AND fam=?", (row, fam))}
            self.rows[key] = markers
        family_ts = markers.get((FAMILY_MARKER, b""), -1)
        column_ts = markers.get((COLUMN_MARKER, qual), -1)
        return ts <= family_ts or ts <= column_ts


def _delete(conn, row, fam, qual, ts):
    if qual is None:
        conn.execute("DELETE FROM cells WHERE row=? AND fam=? AND ts <= ?", (row, fam, ts))
        kind, marker_qual = FAMILY_MARKER, b""
    else:
        conn.execute("DELETE FROM cells WHERE row=? AND fam=? AND qual=? AND ts <= ?", (row, fam, qual, ts))
        kind, marker_qual = COLUMN_MARKER, qual
    conn.execute("INSERT INTO markers VALUES (?,?,?,?,?) ON CONFLICT(row, fam, kind, qual) "
                 "DO UPDATE SET ts = max(ts, excluded.ts)", (row, fam, kind, marker_qual, ts))


def _latest(conn, row, fam, qual, spec, ts_now):
    """``(ts, value)`` of the newest visible cell, or None."""
    hit = conn.execute("SELECT ts, codec, value FROM cells WHERE row=? AND fam=? AND qual=? "
                       "ORDER BY ts DESC LIMIT 1", (row, fam, qual)).fetchone()
    if hit is None or (spec.ttl < FOREVER and hit[0] <= ts_now - spec.ttl * 1000):
        return None
    return hit[0], codec.decode(hit[1], hit[2])


def _column(conn, row, fam, qual, spec):
    """``[(rowid, ts, codec, value)]`` of the column's newest cells, newest first: VERSIONS + 1
    at most, so :func:`_write_over` knows whether the column holds more than VERSIONS."""
    return conn.execute("SELECT rowid, ts, codec, value FROM cells WHERE row=? AND fam=? AND qual=? "
                        "ORDER BY ts DESC LIMIT ?", (row, fam, qual, max(spec.versions, 0) + 1)).fetchall()


def _visible_newest(column, spec, ts_now):
    """``(ts, value)`` of the newest visible cell of a :func:`_column`, or None (as :func:`_latest`)."""
    if not column or (spec.ttl < FOREVER and column[0][1] <= ts_now - spec.ttl * 1000):
        return None
    return column[0][1], codec.decode(column[0][2], column[0][3])


def _write_over(conn, column, row, fam, qual, versions, ts, cell_codec, stored):
    """Write one cell at ``ts`` in a column holding ``column`` (:func:`_column`, read in this
    transaction), then keep its ``versions`` newest cells: what an INSERT OR REPLACE and a
    :func:`~.pruning.prune` do, in one statement when the column's cells say what the prune
    would drop.  An increment or append writes at or after the newest cell, so:

    * at the newest cell's ts, the value replaces it, and the column counts no more cells;
    * after it, in a column of fewer than ``versions`` cells, one more cell is still in bounds;
    * after it, in a column of exactly ``versions`` cells, the prune drops the oldest of them,
      so that cell becomes the new one (an UPDATE instead of an insert and a delete).

    Anything else (a column over ``versions``, which a lowered VERSIONS leaves, a ts before the
    newest, no versions kept) takes the insert and the prune.
    """
    newest = column[0][1] if column else None
    if versions >= 1 and len(column) <= versions and (newest is None or ts >= newest):
        if ts == newest:
            conn.execute("UPDATE cells SET codec=?, value=? WHERE rowid=?", (cell_codec, stored, column[0][0]))
        elif len(column) == versions:
            conn.execute("UPDATE cells SET ts=?, codec=?, value=? WHERE rowid=?",
                         (ts, cell_codec, stored, column[-1][0]))
        else:
            conn.execute("INSERT INTO cells (row, fam, qual, ts, codec, value) VALUES (?,?,?,?,?,?)",
                         (row, fam, qual, ts, cell_codec, stored))
    else:
        _insert_and_prune(conn, row, fam, qual, versions, ts, cell_codec, stored)


def _insert_and_prune(conn, row, fam, qual, versions, ts, cell_codec, stored):
    """Write one cell, then drop the column's cells beyond its ``versions`` newest."""
    conn.execute("INSERT OR REPLACE INTO cells (row, fam, qual, ts, codec, value) VALUES (?,?,?,?,?,?)",
                 (row, fam, qual, ts, cell_codec, stored))
    prune(conn, [(row, fam, qual, versions - 1)])


def _wrap(value):
    """Java long arithmetic: wrap on overflow."""
    return (value + 2**63) % 2**64 - 2**63
