"""A bounded pool of read connections to one table file.

Reads used to take a connection per thread, kept until the engine closed: a server that runs a
thread per request (or a pool that replaces its threads) opened two file descriptors (the
database and its write-ahead log) per table for every thread it ever ran, and a gateway scanner
kept the connection of the thread that fetched its first page, so its later pages ran on a
connection another thread was using (issue 21, defects 5 and 6).

Here a read borrows a connection for exactly one read (a get, or one page of a scan) and gives
it back, so:

* at most ``max_open`` connections are open at once, whatever the number of threads: a read
  that finds them all busy waits for one to be returned;
* a connection is used by one thread at a time, and never holds a transaction between reads
  (one left open by an interrupted read is rolled back when it is returned);
* returned connections stay open for the next read (opening one costs a few pragmas), the most
  recently returned first, so a single thread keeps reusing the same one.

Each connection's page cache is capped (``PRAGMA cache_size``, :data:`READER_CACHE_KIB`):
SQLite's default of 2 MB a connection, times ``max_open`` connections, times every table a
gateway serves (each store prefix has its own), grew a gateway toward 830 MB (issue 23).  Reads
still hit the OS page cache, which all connections share, so a small private cache costs little.

A caller must not borrow a second connection of the same pool while holding one: with every
connection borrowed that way, it would wait for itself.  The engine's reads borrow one at a time.
"""

import contextlib
import sqlite3
import threading

#: Read connections per table by default: more than the 2-4 cores such a server usually has
#: (SQLite reads run without the GIL), far fewer than a thread-per-request server's threads.
DEFAULT_MAX_OPEN = 8
#: KiB of page cache per read connection: 32 of the engine's 16 KB pages, which hold a table's
#: B-tree inner pages; leaf pages come from the OS page cache shared by every connection.
READER_CACHE_KIB = 512
#: KiB of page cache of a table's one write connection: a write touches more pages than a read
#: (and its transactions are bigger), and there is one per table, not ``max_open``.
WRITER_CACHE_KIB = 2048


def cap_page_cache(conn, kib):
    """Cap ``conn``'s page cache at ``kib`` KiB (a negative ``cache_size`` is in KiB); returns it."""
    conn.execute(f"PRAGMA cache_size=-{int(kib)}")
    return conn


class ReaderPool:
    """Up to ``max_open`` connections made by ``opener()``, each with a page cache of
    ``cache_kib`` KiB (None: SQLite's default); see the module docstring."""

    def __init__(self, opener, max_open=DEFAULT_MAX_OPEN, cache_kib=READER_CACHE_KIB):
        if not isinstance(max_open, int) or max_open < 1:
            raise ValueError(f"max_open must be a positive integer, not {max_open!r}")
        self._opener = opener if cache_kib is None else (lambda: cap_page_cache(opener(), cache_kib))
        self.max_open = max_open
        self._cond = threading.Condition()
        self._idle = []  # open connections nobody holds, most recently returned last
        self._open = 0  # idle + borrowed
        self._closed = False

    @contextlib.contextmanager
    def connection(self):
        """Borrow a connection for the duration of the ``with`` block."""
        conn = self._acquire()
        try:
            yield conn
        finally:
            self._release(conn)

    def _acquire(self):
        with self._cond:
            while True:
                if self._closed:
                    # what a read on a closed connection raised before: the same error to callers
                    raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
                if self._idle:
                    return self._idle.pop()
                if self._open < self.max_open:
                    self._open += 1  # reserved before opening, so concurrent opens stay bounded
                    break
                self._cond.wait()
        try:
            return self._opener()
        except BaseException:
            with self._cond:
                self._open -= 1
                self._cond.notify()
            raise

    def _release(self, conn):
        try:
            if conn.in_transaction:  # a read interrupted inside its snapshot
                conn.rollback()
        except Exception:  # noqa: BLE001 - an unusable connection is closed below instead
            keep = False
        else:
            keep = True
        with self._cond:
            if keep and not self._closed:
                self._idle.append(conn)
                self._cond.notify()
                return
            self._open -= 1
            self._cond.notify()
        conn.close()

    def counts(self):
        """``(open, borrowed)`` connections right now."""
        with self._cond:
            return self._open, self._open - len(self._idle)

    def close(self):
        """Close the idle connections now and borrowed ones when they come back; later borrows
        fail."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            conn.close()
