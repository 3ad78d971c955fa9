"""SQLite files opened the way this project opens them: the one place above which no module
names ``sqlite3`` (DESIGN.md keeps the storage library below the backend contract; the embedded
search engine keeps its index in an SQLite file too, and opens it here)."""

import sqlite3

#: what any SQLite call may raise (a busy, locked, corrupt or vanished file)
SQLiteError = sqlite3.Error
#: an interrupted, busy or locked statement (a query stopped by its time budget among them)
SQLiteOperationalError = sqlite3.OperationalError


def connect_wal(path, busy_timeout_ms, synchronous="NORMAL"):
    """A connection to ``path`` in autocommit mode, usable from any thread (the caller locks),
    in WAL mode with ``busy_timeout_ms`` and ``synchronous`` set: many readers beside one
    writer, across processes."""
    conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    return conn
