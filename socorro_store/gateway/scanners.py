"""Open scanners of the gateway: global ids, expiry, batching and filtering.

HBase's Thrift1 handler keeps scanners in one server-wide map with ids from a counter starting at
0, shared by every client connection (``reference/hbase-thrift1-semantics.md`` §6); the newest
handler expires a scanner 120 s after its last use.  A scanner here is a generator over the
engine's paged scan with the filter and ``batchSize`` applied, so memory stays bounded.

Any worker may fetch a scanner's next rows (the ids are server-wide, and a client may fetch on
another of its connections), so a scanner holds nothing of the worker that opened or last
fetched it: the engine borrows a read connection for each page and returns it before yielding
(``engine/pool.py``), and ``Scanner.lock`` lets one fetch at a time advance it.
"""

import itertools
import threading
import time

from .filters import apply_filter

SCANNER_EXPIRY_S = 120.0
_I32 = 2**31


class Scanner:
    """One open scan.  ``next_rows(n)`` returns up to ``n`` ``(row, cells)`` results."""

    def __init__(self, rows, flt=None, batch=None, sort_columns=False, error=None):
        """``error``: raised by every fetch; HBase opens some scans it cannot run (an
        incompatible batch, a reversed scan of on-demand families) and fails their first fetch."""
        self.sort_columns = sort_columns
        self.error = error
        self._results = self._generate(rows, flt, batch)
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        self.done = False

    @staticmethod
    def _generate(rows, flt, batch):
        closed = set()  # families whose store scanner a filter ended (see apply_filter)
        for row, cells in rows:
            if flt is not None:
                # HBase's region scanner resets the filter after each row and only then asks
                # filterAllRemaining: a verdict that reset clears (ColumnCountGetFilter's) does
                # not end the scan.
                flt.reset()
                if flt.filter_all_remaining():
                    return
                cells = apply_filter(flt, row, cells, closed)
                if cells is None:
                    continue
            if batch:
                for start in range(0, len(cells), batch):
                    yield row, cells[start:start + batch]
            else:
                yield row, cells

    def next_rows(self, count):
        with self.lock:
            self.last_used = time.monotonic()
            if self.error is not None:
                raise self.error
            if self.done or count <= 0:
                return []
            out = list(itertools.islice(self._results, count))
            if len(out) < count:
                self.done = True
                self._results.close()
            return out

    def close(self):
        with self.lock:
            self.done = True
            self._results.close()


class ScannerRegistry:
    """Server-wide scanner ids (i32, from 0), with idle expiry."""

    def __init__(self, expiry_s=SCANNER_EXPIRY_S):
        self.expiry_s = expiry_s
        self._lock = threading.Lock()
        self._next = 0
        self._scanners = {}

    def add(self, scanner):
        self._expire()
        with self._lock:
            while self._next in self._scanners:
                self._next = (self._next + 1) % _I32
            scanner_id = self._next
            self._next = (self._next + 1) % _I32
            self._scanners[scanner_id] = scanner
        return scanner_id

    def get(self, scanner_id):
        """The scanner, or None for an unknown, closed or expired id."""
        with self._lock:
            return self._scanners.get(scanner_id)

    def remove(self, scanner_id):
        with self._lock:
            scanner = self._scanners.pop(scanner_id, None)
        if scanner is not None:
            scanner.close()
        return scanner

    def _expire(self):
        limit = time.monotonic() - self.expiry_s
        with self._lock:
            stale = [self._scanners.pop(sid) for sid, s in list(self._scanners.items())
                     if s.last_used < limit]
        for scanner in stale:  # closed now, on this thread, rather than whenever it is collected
            scanner.close()

    def close_all(self):
        with self._lock:
            scanners = list(self._scanners.values())
            self._scanners.clear()
        for scanner in scanners:
            scanner.close()

    def __len__(self):
        with self._lock:
            return len(self._scanners)
