"""A lease in one cell: which process may write a derived view now (the search feed, the deriver).

The cell holds ``holder|expiry ns``.  Any process may take the lease when it is free or expired,
with a check-and-put against the value it read, so of two takers one wins; the holder renews it
once half its term has passed, and a killed holder's work is taken over within one term.  Clocks
of the hosts must agree to well within the term.

A batch job that needs the lease for a while (``rollup`` deriving a day again) asks for it
(:meth:`RowLease.want`): the holder gives it up within :data:`WISH_CHECK_SECONDS` (at once in the
same process), and no other process takes it while the wish lives: until the job releases the
lease, or one term after the wish was last made.
"""

import os
import socket
import threading
import time
import uuid

from ..backends import RowMutation
from ..errors import BackendError, BackendUnavailable

#: how often a holder looks for another's wish for its lease (one read of one cell)
WISH_CHECK_SECONDS = 2.0
#: ``(id(backend), table, row) -> (holder, until ns)``: the wishes made in this process, seen by
#: its holders without a call
_wanted_here = {}
_wanted_lock = threading.Lock()


def new_holder():
    """A holder name unique to this process and object: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}".encode("utf-8")


class RowLease:
    """The lease of ``column`` in ``table``'s ``row``, for ``holder`` (not thread-safe: one user).

    ``extra_columns``: other cells of the row read with the lease when it is taken (the deriver's
    journal), kept in :attr:`taken_with` after a take.  ``wanted_column``: where a wish for the
    lease is kept (:meth:`want`); None: the lease cannot be asked for."""

    def __init__(self, backend, table, row, column, holder=None, seconds=30.0, extra_columns=(),
                 wanted_column=None):
        self.backend, self.table, self.row, self.column = backend, table, row, column
        self.wanted_column = wanted_column
        self.holder = holder or new_holder()
        self.term_ns = int(seconds * 1e9)
        self.extra_columns = list(extra_columns)
        self.until = 0
        self.taken_with = {}
        self._wish_checked = 0  # when this holder last read the wish cell
        self._wished = False  # whether this holder's wish is out

    @property
    def held(self):
        return self.until > time.time_ns()

    def _cell(self, until):
        """The lease cell's value naming this holder until ``until`` (ns)."""
        return self.holder + b"|%d" % until

    @property
    def value(self):
        """The cell's value while held."""
        return self._cell(self.until)

    def want(self):
        """Ask for the lease: its holder gives it up (at its next renewal, or its next
        :meth:`hold` in this process) and no other holder takes it for one term.  One put."""
        until = time.time_ns() + self.term_ns
        self.backend.mutate_rows(self.table, [RowMutation(self.row, {self.wanted_column: self._cell(until)})])
        with _wanted_lock:
            _wanted_here[(id(self.backend), self.table, self.row)] = (self.holder, until)
        self._wished = True

    def _withdraw(self):
        """Take this holder's wish back (with its release): the others may take the lease now."""
        self._wished = False
        key = (id(self.backend), self.table, self.row)
        with _wanted_lock:
            if _wanted_here.get(key, (None,))[0] == self.holder:
                del _wanted_here[key]
        cell = self.backend.get_row(self.table, self.row, [self.wanted_column]).get(self.wanted_column)
        if cell and cell.startswith(self.holder + b"|"):  # not a wish another made since
            self.backend.check_and_put(self.table, self.row, self.wanted_column, cell, {self.wanted_column: b""})

    def _wanted_elsewhere(self, cell, now):
        """Whether another holder's wish for the lease is alive (in ``cell``, or made here)."""
        with _wanted_lock:
            here = _wanted_here.get((id(self.backend), self.table, self.row))
        wishes = [here] if here else []
        if cell:
            holder, _, until = cell.rpartition(b"|")
            if until.isdigit():
                wishes.append((holder, int(until)))
        return any(holder != self.holder and until > now for holder, until in wishes)

    def hold(self):
        """Hold (take or renew) the lease; False while another live process holds it, or
        another holder wants it (:meth:`want`: a held lease is then given up).  After a take
        (not a renewal), :attr:`taken_with` holds the extra cells read with it."""
        now = time.time_ns()
        if self.until - now > self.term_ns // 2:  # held: no renewal due, but maybe a wish
            if not self.wanted_column:
                return True
            cell = None
            if now - self._wish_checked >= WISH_CHECK_SECONDS * 1e9:
                self._wish_checked = now
                cell = self.backend.get_row(self.table, self.row, [self.wanted_column]).get(self.wanted_column)
            if not self._wanted_elsewhere(cell, now):
                return True
            self.release()
            return False
        renewing = self.until > now
        columns = [self.column] + ([] if renewing else self.extra_columns)
        cells = self.backend.get_row(self.table, self.row, columns + ([self.wanted_column] if self.wanted_column else []))
        if self.wanted_column and self._wanted_elsewhere(cells.pop(self.wanted_column, None), now):
            self.release()
            return False
        current = cells.get(self.column)
        if current:
            holder, _, until = current.rpartition(b"|")
            if holder != self.holder and until.isdigit() and int(until) > now:
                self.until = 0
                return False
        until = now + self.term_ns
        won = self.backend.check_and_put(self.table, self.row, self.column, current,
                                         {self.column: self._cell(until)})
        self.until = until if won else 0
        if won and not renewing:
            self.taken_with = {c: v for c, v in cells.items() if c != self.column}
        return won

    def lapse(self):
        """Treat the lease as not held here, though its cell still names this holder: the next
        :meth:`hold` takes it again (this holder's own lease is taken at once) and reads
        :attr:`taken_with` anew, as after a failure that leaves work to redo."""
        self.until = 0

    def put_fenced(self, puts):
        """Put ``puts`` in the lease row only while this process still holds the lease (a
        check-and-put against its value; on Thrift1, whose check covers only the first cell put,
        the renewed lease cell is that cell and ``puts`` follow in a second call, once the check
        applied); False, and the lease dropped, when it does not.

        The same put renews the lease, so the lease cell changes with every fenced put.  A taker
        reads the row (the journal: :attr:`taken_with`) before its check-and-put claims the
        cell; had the cell stayed the same, a put landing between the two (a holder still
        working past its term, which nobody had taken yet) would leave the taker holding what
        it read before that put, and replaying a journal older than what the holder wrote."""
        until = max(time.time_ns() + self.term_ns, self.until + 1)
        # the lease cell first: Thrift1's check-and-put puts only its first cell with the check
        won = self.backend.check_and_put(self.table, self.row, self.column, self.value,
                                         {self.column: self._cell(until), **puts})
        self.until = until if won else 0
        return won

    def release(self, puts=None):
        """Give the lease up (and put ``puts`` with it), and this holder's wish for it; the lease
        expires anyway if this fails, and the wish too."""
        if self.until > time.time_ns():
            try:
                self.backend.check_and_put(self.table, self.row, self.column, self.value,
                                           {self.column: b"", **(puts or {})})
            except (BackendError, BackendUnavailable):
                pass
        self.until = 0
        if self._wished:
            try:
                self._withdraw()
            except (BackendError, BackendUnavailable):
                pass
