"""A lease in one cell: which process may write a derived view now (the search feed, the deriver).

The cell holds ``holder|expiry ns``.  Any process may take the lease when it is free or expired,
with a check-and-put against the value it read, so of two takers one wins; the holder renews it
once half its term has passed, and a killed holder's work is taken over within one term.  Clocks
of the hosts must agree to well within the term.
"""

import os
import socket
import time
import uuid

from ..errors import BackendError, BackendUnavailable


def new_holder():
    """A holder name unique to this process and object: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}".encode("utf-8")


class RowLease:
    """The lease of ``column`` in ``table``'s ``row``, for ``holder`` (not thread-safe: one user).

    ``extra_columns``: other cells of the row read with the lease when it is taken (the deriver's
    journal), kept in :attr:`taken_with` after a take."""

    def __init__(self, backend, table, row, column, holder=None, seconds=30.0, extra_columns=()):
        self.backend, self.table, self.row, self.column = backend, table, row, column
        self.holder = holder or new_holder()
        self.term_ns = int(seconds * 1e9)
        self.extra_columns = list(extra_columns)
        self.until = 0
        self.taken_with = {}

    @property
    def held(self):
        return self.until > time.time_ns()

    @property
    def value(self):
        """The cell's value while held."""
        return self.holder + b"|%d" % self.until

    def hold(self):
        """Hold (take or renew) the lease; False while another live process holds it.  After a
        take (not a renewal), :attr:`taken_with` holds the extra cells read with it."""
        now = time.time_ns()
        if self.until - now > self.term_ns // 2:
            return True
        renewing = self.until > now
        cells = self.backend.get_row(self.table, self.row, [self.column] + ([] if renewing else self.extra_columns))
        current = cells.get(self.column)
        if current:
            holder, _, until = current.rpartition(b"|")
            if holder != self.holder and until.isdigit() and int(until) > now:
                self.until = 0
                return False
        until = now + self.term_ns
        won = self.backend.check_and_put(self.table, self.row, self.column, current,
                                         {self.column: self.holder + b"|%d" % until})
        self.until = until if won else 0
        if won and not renewing:
            self.taken_with = {c: v for c, v in cells.items() if c != self.column}
        return won

    def put_fenced(self, puts):
        """Put ``puts`` in the lease row only while this process still holds the lease (a
        check-and-put against its value: one call, even on Thrift1, whose check covers one put
        cell); False, and the lease dropped, when it does not."""
        won = self.backend.check_and_put(self.table, self.row, self.column, self.value, puts)
        if not won:
            self.until = 0
        return won

    def release(self, puts=None):
        """Give the lease up (and put ``puts`` with it); it expires anyway if this fails."""
        if self.until > time.time_ns():
            try:
                self.backend.check_and_put(self.table, self.row, self.column, self.value,
                                           {self.column: b"", **(puts or {})})
            except (BackendError, BackendUnavailable):
                pass
        self.until = 0
