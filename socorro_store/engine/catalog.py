"""The engine's directory: a catalog database and one SQLite file per table.

Layout of ``DIR``::

    catalog.sqlite          tables (name, file, enabled) and families (attributes as JSON)
    tables/t<N>.sqlite      cells and delete markers of one table

Table and family names live only inside the catalog, as data; file names are generated, so no
name (quotes, NUL bytes, ``../``) ever reaches the file system or the SQL text.
Files are created with mode 0600 and the directory with 0700: they hold crash data.
"""

import json
import os
import sqlite3
import threading
from dataclasses import dataclass

from ..errors import StoreNotFound, TableExists, TableNotFound
from ..schema.specs import FamilySpec
from . import codec

BUSY_TIMEOUT_MS = 30000

_CATALOG_SQL = """
CREATE TABLE IF NOT EXISTS tables (
    name BLOB PRIMARY KEY, file TEXT NOT NULL, enabled INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS families (
    tbl BLOB NOT NULL, name BLOB NOT NULL, position INTEGER NOT NULL, attrs TEXT NOT NULL,
    PRIMARY KEY (tbl, name)
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

TABLE_SQL = """
CREATE TABLE IF NOT EXISTS cells (
    row BLOB NOT NULL, fam BLOB NOT NULL, qual BLOB NOT NULL, ts INTEGER NOT NULL,
    codec INTEGER NOT NULL, value BLOB NOT NULL
);
-- A rowid table with a unique key index, not WITHOUT ROWID: values are often kilobytes, and
-- large records in a clustered b-tree make inserts about 2.5x slower.
CREATE UNIQUE INDEX IF NOT EXISTS cells_key ON cells (row, fam, qual, ts DESC);
CREATE TABLE IF NOT EXISTS markers (
    row BLOB NOT NULL, fam BLOB NOT NULL, kind INTEGER NOT NULL, qual BLOB NOT NULL,
    ts INTEGER NOT NULL,
    PRIMARY KEY (row, fam, kind, qual)
) WITHOUT ROWID;
"""

FAMILY_MARKER, COLUMN_MARKER = 0, 1


@dataclass
class TableInfo:
    """What the catalog knows of one table.  ``families`` maps family bytes to FamilySpec."""

    name: str
    file: str
    enabled: bool
    families: dict
    extra: dict


def connect(path, sync="normal"):
    """Open a SQLite connection in WAL mode with our pragmas."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    # 16 KB pages keep kilobyte-sized values inline instead of in overflow pages: about 2-3x the
    # write rate for 2 KB cells.  Only takes effect on a new file (set before WAL mode).
    conn.execute("PRAGMA page_size=16384")
    conn.execute("PRAGMA journal_mode=WAL")
    # WAL + NORMAL survives a killed process (the OS keeps the WAL); FULL also survives power loss.
    conn.execute(f"PRAGMA synchronous={'FULL' if sync == 'full' else 'NORMAL'}")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # Checkpoint at 4000 pages (64 MB of 16 KB pages) instead of 1000: fewer checkpoint stalls
    # under batched writes, at the cost of a WAL file of that size per table.  The engine's
    # background checkpointer (checkpointer.py) normally copies the log long before; this is the
    # bound if it falls behind.
    conn.execute("PRAGMA wal_autocheckpoint=4000")
    return codec.register(conn)  # reads decode values in SQL


def _private_file(path):
    if not os.path.exists(path):
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)


class Catalog:
    """The catalog database of an engine directory.  Thread-safe.

    ``create=False`` opens an existing store only: a directory without ``catalog.sqlite`` raises
    :class:`StoreNotFound` and nothing is created (a read command must not leave an empty store
    behind a mistyped path).
    """

    def __init__(self, directory, sync="normal", create=True):
        self.directory = os.path.abspath(directory)
        self.sync = sync
        if not create and not os.path.isfile(os.path.join(self.directory, "catalog.sqlite")):
            raise StoreNotFound(f"no store at {self.directory} (run `socorro-store tables create`)")
        # makedirs applies ``mode`` only to the leaf, so create the store directory itself first.
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        os.makedirs(os.path.join(self.directory, "tables"), mode=0o700, exist_ok=True)
        path = os.path.join(self.directory, "catalog.sqlite")
        _private_file(path)
        self._lock = threading.RLock()
        self._conn = connect(path, sync)
        self._conn.executescript(_CATALOG_SQL)
        self._tables = {}
        self.reload()

    def close(self):
        with self._lock:
            self._conn.close()

    def reload(self):
        """Re-read the catalog (another process sharing the directory may have changed it)."""
        with self._lock:
            tables = {}
            for name, file, enabled in self._conn.execute("SELECT name, file, enabled FROM tables"):
                tables[bytes(name).decode("utf-8", "surrogateescape")] = TableInfo(
                    bytes(name).decode("utf-8", "surrogateescape"), file, bool(enabled), {}, {})
            rows = self._conn.execute("SELECT tbl, name, attrs FROM families ORDER BY tbl, position")
            for tbl, fam, attrs in rows:
                info = tables.get(bytes(tbl).decode("utf-8", "surrogateescape"))
                if info is not None:
                    data = json.loads(attrs)
                    extra = data.pop("extra", {})
                    info.families[bytes(fam)] = FamilySpec(**data)
                    info.extra[bytes(fam)] = extra
            self._tables = tables

    def names(self):
        with self._lock:
            return sorted(self._tables)

    def get(self, name):
        """The :class:`TableInfo` of ``name``; raises :class:`TableNotFound`."""
        info = self._tables.get(name)
        if info is None:
            self.reload()
            info = self._tables.get(name)
            if info is None:
                raise TableNotFound(f"table {name!r} does not exist")
        return info

    def path_of(self, info):
        return os.path.join(self.directory, "tables", info.file)

    def add(self, name, families, extras, now_ms):
        """Register a table and create its file.  ``families``: list of FamilySpec."""
        key = name.encode("utf-8", "surrogateescape")
        with self._lock:
            self.reload()
            if name in self._tables:
                raise TableExists(f"table {name!r} already exists")
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT value FROM counters WHERE name='next_file'").fetchone()
                number = row[0] if row else 1
                conn.execute("INSERT OR REPLACE INTO counters VALUES ('next_file', ?)", (number + 1,))
                file = f"t{number:06d}.sqlite"
                path = os.path.join(self.directory, "tables", file)
                _private_file(path)
                table_conn = connect(path, self.sync)
                table_conn.executescript(TABLE_SQL)
                table_conn.close()
                conn.execute("INSERT INTO tables VALUES (?, ?, 1, ?)", (key, file, now_ms))
                for position, fam in enumerate(families):
                    attrs = dict(vars(fam))
                    attrs["extra"] = extras.get(fam.name, {})
                    conn.execute("INSERT INTO families VALUES (?, ?, ?, ?)",
                                 (key, fam.name.encode("utf-8", "surrogateescape"), position,
                                  json.dumps(attrs)))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            self.reload()
            return self._tables[name]

    def remove(self, name):
        """Unregister a table and delete its files."""
        with self._lock:
            info = self.get(name)
            key = name.encode("utf-8", "surrogateescape")
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM tables WHERE name=?", (key,))
            conn.execute("DELETE FROM families WHERE tbl=?", (key,))
            conn.execute("COMMIT")
            self.reload()
        path = self.path_of(info)
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(path + suffix)
            except FileNotFoundError:
                pass

    def set_enabled(self, name, enabled):
        with self._lock:
            self.get(name)
            self._conn.execute("UPDATE tables SET enabled=? WHERE name=?",
                               (int(enabled), name.encode("utf-8", "surrogateescape")))
            self.reload()
