"""What a process keeps of a backend's rows between requests, the least recently used going first.

The top-crashers page keeps what it read of rows that change rarely or only by growing (a day's
open ranking head, a ranking row's cells), each with that row's slack, and reads only the slack
next time (:mod:`.rankings`, :mod:`.kept_ranking_cells`).  The memo itself only keeps: whether a
kept value still stands is the caller's to check.  Nothing is written to the store: a report
writes nothing.
"""

import collections
import threading
import weakref


class BackendMemo:
    """``{backend: {key: value}}``, at most ``limit`` keys a backend, the least recently used
    going first; a backend's keys go with it (weak keys).  Safe across threads: a request's
    reads may overlap another's."""

    def __init__(self, limit):
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, not {limit!r}")
        self.limit = limit
        self._kept = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get_many(self, backend, keys):
        """``{key: value}`` of the ``keys`` kept for ``backend`` (each now the most recently used)."""
        with self._lock:
            mine = self._kept.get(backend)
            if not mine:
                return {}
            found = {}
            for key in keys:
                value = mine.get(key)
                if value is not None:
                    found[key] = value
                    mine.move_to_end(key)
            return found

    def update(self, backend, kept=(), dropped=()):
        """Keep ``kept`` (``[(key, value)]``, ``None`` values not kept) and forget ``dropped``
        keys, then the least recently used beyond :attr:`limit`."""
        with self._lock:
            mine = self._kept.setdefault(backend, collections.OrderedDict())
            for key in dropped:
                mine.pop(key, None)
            for key, value in kept:
                if value is not None:
                    mine[key] = value
                    mine.move_to_end(key)
            while len(mine) > self.limit:
                mine.popitem(last=False)

    def forget(self, backend):
        """Keep nothing more of ``backend`` (what a new process would have)."""
        with self._lock:
            self._kept.pop(backend, None)
