"""A recount's counts, held in a temporary SQLite file instead of in memory.

A day of 3 M crashes can hold 100 k signatures, each counted per hour and per dimension key
(product, version, OS): millions of numbers; and the dimension values as sent (before the
cardinality cap) are as many as the clients send.  Held in Python dicts they cost a few hundred bytes
each, so the roll-up's memory grew with the day.  :class:`SpilledCounts` keeps them in a
private temporary SQLite database (SQLite's own ``""`` file: on disk, deleted when closed) with a
small page cache, so what the process holds is a page of the recount and a chunk of signatures,
whatever the day holds.

What it holds, all keyed by the ``crash_report_signatures`` row (bytes, which SQLite orders as
HBase does, by ``memcmp``):

* ``counts``: ``(signature row, interval row, dimension key) -> n``, the key ``b""`` for the plain
  count; :meth:`add` sums into it;
* ``live``: the signature rows found holding a column of a day (``(day, signature row)``), so the
  roll-up also visits rows whose exact count is now zero;
* ``minutes``: ``(minute row, counter name) -> n``, the metrics counts, dimensioned names with
  the values as sent (the roll-up caps them once the day's volumes are known);
* ``volumes``: ``(field, product, value) -> n``, crashes per dimension value as sent (the
  product is ``""`` but for versions);
* ``rankings``: ``(ranking row, signature row) -> n``, a day's counts summed per ranking row
  (:meth:`rank`), popped a row at a time.
"""

import itertools
import sqlite3

#: pages of the temporary database held in memory (SQLite's cache; 4 MiB of 4 KiB pages)
CACHE_PAGES = 1000

_SCHEMA = """
CREATE TABLE counts (sig BLOB NOT NULL, interval BLOB NOT NULL, key BLOB NOT NULL, n INTEGER NOT NULL,
                     PRIMARY KEY (sig, interval, key)) WITHOUT ROWID;
CREATE TABLE live (day TEXT NOT NULL, sig BLOB NOT NULL, PRIMARY KEY (day, sig)) WITHOUT ROWID;
CREATE TABLE minutes (minute BLOB NOT NULL, name TEXT NOT NULL, n INTEGER NOT NULL,
                      PRIMARY KEY (minute, name)) WITHOUT ROWID;
CREATE TABLE volumes (field TEXT NOT NULL, product TEXT NOT NULL, value TEXT NOT NULL, n INTEGER NOT NULL,
                      PRIMARY KEY (field, product, value)) WITHOUT ROWID;
CREATE TABLE rank_rows (key BLOB PRIMARY KEY, row BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE rankings (row BLOB NOT NULL, sig BLOB NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (row, sig)) WITHOUT ROWID;
"""
_UPSERT = {table: f"INSERT INTO {table} VALUES ({', '.join('?' * (len(key) + 1))}) ON CONFLICT ({', '.join(key)}) "
                  f"DO UPDATE SET n = n + excluded.n"
           for table, key in (("counts", ("sig", "interval", "key")), ("minutes", ("minute", "name")),
                              ("volumes", ("field", "product", "value")))}


class SpilledCounts:
    """Signature counts and live signature rows on disk (see the module docstring).

    Not thread-safe: one roll-up (one thread) owns it.  :meth:`close` deletes the file; it is
    also a context manager.
    """

    def __init__(self):
        self._db = sqlite3.connect("", isolation_level=None)
        self._db.execute(f"PRAGMA cache_size = {CACHE_PAGES}")
        self._db.execute("PRAGMA journal_mode = OFF")  # a scratch file: nothing to recover
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.executescript(_SCHEMA)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._db.close()

    # -- counts ----------------------------------------------------------------------------

    def add(self, counts=None, minutes=None, volumes=None):
        """Sum ``counts`` ``{(signature row, interval row, key): n}``, ``minutes`` ``{(minute
        row, name): n}`` and ``volumes`` ``{(field, product, value): n}`` into their tables."""
        self._db.execute("BEGIN")
        for table, items in (("counts", counts), ("minutes", minutes), ("volumes", volumes)):
            if items:
                self._db.executemany(_UPSERT[table], ((*key, n) for key, n in items.items()))
        self._db.execute("COMMIT")

    def clear(self):
        """Forget every count, minute count and volume (the live rows stay)."""
        for table in ("counts", "minutes", "volumes"):
            self._db.execute(f"DELETE FROM {table}")

    def minutes_of(self, start_row, end_row):
        """``{minute row: {name: n}}`` of the minute rows in ``[start_row, end_row)``."""
        out = {}
        for minute, name, n in self._db.execute("SELECT minute, name, n FROM minutes WHERE minute >= ? AND minute < ?",
                                                (start_row, end_row)):
            out.setdefault(minute, {})[name] = n
        return out

    def top_volumes(self, limits):
        """``{(field, product, value): n}``: per field, the ``limits[field]`` values with the most
        crashes (a version's limit applies per product)."""
        out = {}
        for field, limit in limits.items():
            query = ("SELECT field, product, value, n FROM (SELECT *, ROW_NUMBER() OVER "
                     "(PARTITION BY product ORDER BY n DESC, value) AS rank FROM volumes WHERE field = ?) "
                     "WHERE rank <= ?")
            out.update({(f, p, v): n for f, p, v, n in self._db.execute(query, (field, limit))})
        return out

    def unique_by_interval(self):
        """``{interval row: number of signatures counted in it}`` (plain counts)."""
        return dict(self._db.execute("SELECT interval, COUNT(DISTINCT sig) FROM counts WHERE key = x'' "
                                     "GROUP BY interval"))

    def unique(self):
        """The number of signatures counted in any interval."""
        return self._db.execute("SELECT COUNT(DISTINCT sig) FROM counts WHERE key = x''").fetchone()[0]

    def counts_of(self, sig_rows):
        """``{signature row: {(interval row, key): n}}`` of the signature rows ``sig_rows``
        (an ascending list: read as one range)."""
        out = {row: {} for row in sig_rows}
        if sig_rows:
            for sig, interval, key, n in self._db.execute(
                    "SELECT sig, interval, key, n FROM counts WHERE sig >= ? AND sig <= ?", (sig_rows[0], sig_rows[-1])):
                if sig in out:
                    out[sig][(interval, key)] = n
        return out

    def rank(self, row_of_key, key_prefixes):
        """Fill ``rankings`` with the counts summed over the intervals per ranking row: the plain
        counts' and those of the keys starting with one of ``key_prefixes`` (bytes), each key's
        under ``row_of_key(key)`` (several keys may share a row: their counts add up).  Returns
        the number of (row, signature row) pairs held."""
        where = " OR ".join(["key = x''"] + ["substr(key, 1, ?) = ?"] * len(key_prefixes))
        params = [v for prefix in key_prefixes for v in (len(prefix), prefix)]
        keys = [key for (key,) in self._db.execute(f"SELECT DISTINCT key FROM counts WHERE {where}", params)]
        self._db.execute("BEGIN")
        self._db.execute("DELETE FROM rank_rows")
        self._db.execute("DELETE FROM rankings")
        self._db.executemany("INSERT INTO rank_rows VALUES (?, ?)", ((key, row_of_key(key)) for key in keys))
        self._db.execute("INSERT INTO rankings SELECT r.row, c.sig, SUM(c.n) FROM counts c JOIN rank_rows r "
                         "ON c.key = r.key GROUP BY r.row, c.sig")
        self._db.execute("COMMIT")
        return self._db.execute("SELECT COUNT(*) FROM rankings").fetchone()[0]

    def pop_ranking(self, row):
        """``{signature row: n}`` of one ranking row of :meth:`rank`, then forgotten."""
        found = dict(self._db.execute("SELECT sig, n FROM rankings WHERE row = ?", (row,)))
        if found:
            self._db.execute("DELETE FROM rankings WHERE row = ?", (row,))
        return found

    def ranking_rows(self):
        """The ranking rows :meth:`rank` filled that are not popped yet, ascending."""
        return [row for (row,) in self._db.execute("SELECT DISTINCT row FROM rankings ORDER BY row")]

    def pop_counts(self, sig_row):
        """``{(interval row, key): n}`` of one signature row, then forgotten."""
        found = {(interval, key): n for interval, key, n in self._db.execute(
            "SELECT interval, key, n FROM counts WHERE sig = ?", (sig_row,))}
        if found:
            self._db.execute("DELETE FROM counts WHERE sig = ?", (sig_row,))
        return found

    def counted_rows(self, chunk):
        """The signature rows with counts, ascending, in lists of up to ``chunk``."""
        return _chunks(self._db.execute("SELECT DISTINCT sig FROM counts ORDER BY sig"), chunk)

    # -- live rows -------------------------------------------------------------------------

    def add_live(self, pairs):
        """Record ``(day, signature row)`` pairs: the row holds a column of the day (ISO date)."""
        if pairs:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR IGNORE INTO live VALUES (?, ?)", pairs)
            self._db.execute("COMMIT")

    def drop_live(self, day):
        self._db.execute("DELETE FROM live WHERE day = ?", (day,))

    def rows_of_day(self, day, chunk):
        """The signature rows counted or live on ``day``, ascending, in lists of up to ``chunk``."""
        return _chunks(self._db.execute("SELECT sig FROM counts UNION SELECT sig FROM live WHERE day = ? "
                                        "ORDER BY 1", (day,)), chunk)


def _chunks(cursor, size):
    rows = (row[0] for row in cursor)
    while True:
        chunk = list(itertools.islice(rows, size))
        if not chunk:
            return
        yield chunk
