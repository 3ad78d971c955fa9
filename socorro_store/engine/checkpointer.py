"""Background WAL checkpoints, off the writers' path.

A SQLite checkpoint copies the write-ahead log into the database file and syncs both.  Left to
SQLite (``wal_autocheckpoint``), it runs inside whichever commit crosses the threshold, and that
commit (so the client that sent it) waits for it: about a fifth of the time of a stream of
batched 2 KB writes.  Here the table asks one engine-wide thread to run a PASSIVE checkpoint on
a connection of its own each time roughly :data:`TRIGGER_BYTES` have been committed.  SQLite
runs it without the GIL and concurrently with the writer (PASSIVE never blocks writers or
readers), so the writer only appends to the log.

Durability is unchanged: a commit is acknowledged once its frames are in the log, checkpoint or
not.  SQLite's own ``wal_autocheckpoint`` (see ``catalog.connect``) stays as the bound on the log
size: if this thread falls behind, the writer's commit checkpoints as before, and then has little
left to copy.
"""

import logging
import sqlite3
import threading

log = logging.getLogger(__name__)

#: Bytes committed to a table between two background checkpoints (about 1,000 16 KB log frames,
#: a quarter of the ``wal_autocheckpoint`` bound, so the thread normally stays ahead of it).
TRIGGER_BYTES = 16 * 1024 * 1024
#: What a commit adds to the log besides its values: a few index and leaf pages.
COMMIT_BYTES = 32 * 1024


class Checkpointer:
    """One daemon thread checkpointing the tables that ask (:meth:`request`), in order."""

    def __init__(self):
        self._cond = threading.Condition()
        self._pending = {}  # tables waiting, in request order (a dict as an ordered set)
        self._thread = None
        self._closed = False

    def request(self, table):
        """Queue ``table.checkpoint()`` (once, however often it is asked before it runs)."""
        with self._cond:
            if self._closed:
                return
            self._pending[table] = None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="checkpointer", daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self):
        """Stop the thread after the checkpoint in progress, if any; pending ones are dropped."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self):
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                table = next(iter(self._pending))
                del self._pending[table]
            try:
                table.checkpoint()
            except sqlite3.Error as exc:  # a busy or vanished file: the writer's bound still holds
                log.warning("background checkpoint of %s failed: %s", table.path, exc)
            except Exception:  # noqa: BLE001 - the thread must outlive any one table's failure
                log.exception("background checkpoint of %s failed", table.path)
