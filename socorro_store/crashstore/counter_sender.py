"""Live counters sent in the background: saves hand their increments over and return.

On an HBase, the counters are most of what a save costs: Thrift1's ``incrementRows`` applies its
increments one after another, each a region-server round trip with its WAL sync, and every
crash increments the same hot rows (the minute, hour, day, month and year of ``metrics``), so a
group's ~100 cells took ~95 ms, more than the rest of its save.  Summed over many groups, the
same cells shrink to a few: the crashes of one minute share their metrics cells.

:class:`CounterSender` is that coalescing, without a timer (the group commit of counters): a
save hands its increments (and its detections: hang pairs, first-seen signatures, which read
the rows the save already wrote) to one sender thread and returns.  The thread takes everything
handed over so far, runs the detections, sums the increments per cell and sends them in one
``increment_many``; what arrives meanwhile waits for the next send.  A lone save's counters go
at once; under load many saves share one call.

What it changes, and what it keeps (the lessons of ``reference/anchors.md``):

* Write, then acknowledge: a send's increments leave the queue only once the backend answered
  (or failed: never replayed, as increments are not idempotent; tallied for ``rollup``).
* Freshness: another process sees a save's counters one send later (milliseconds).  This store
  reads its own writes: its counter reads call :meth:`settle` first, which waits until every
  increment handed over before it was sent.
* Loss window: increments handed over but not yet sent when the process dies.  Crash rows and
  pointers are never deferred, so the next ``rollup`` recomputes every such count.
* Bounded memory: a save that finds :data:`MAX_PENDING_BYTES` of increments (or
  :data:`MAX_PENDING_JOBS` saves) waiting blocks until the sender catches up (back pressure,
  never an unbounded queue).  The bound is in bytes because a job's size varies 100-fold: a
  batch save hands over the increments of up to 100 crashes in one job.
* Closing: :meth:`~CounterSender.close` sends what is pending before the thread stops, and a
  save that was blocked by back pressure while the sender closed sends its own increments in
  its own thread: no job is ever handed to a thread that has gone, so :meth:`settle` never
  waits for one.
* Gathering: with ``gather_s``, a send waits that long after its first job for others to join it
  (at most :data:`GATHER_JOBS`), so the hot rows every save increments (``metrics``' minute, hour,
  day, month and year rows, the queue row, the day's rankings) go once for many saves: on
  Thrift2 each row is a call of its own, on Thrift1 each cell a region-server increment.  A
  :meth:`~CounterSender.settle` or a close ends the wait at once, so this store's own counter
  reads never wait for it; other processes see the counters up to ``gather_s`` later.
"""

import logging
import threading

log = logging.getLogger("socorro_store")

#: the most saves' counters waiting for the sender before a save blocks (back pressure)
MAX_PENDING_JOBS = 10_000
#: the most bytes of increments waiting for the sender before a save blocks (back pressure)
MAX_PENDING_BYTES = 64 << 20
#: what an increment costs in memory beyond its row and column bytes (the tuple, its ints)
INCREMENT_OVERHEAD = 160
#: how long a store's sender waits after a save's counters for others to join them (seconds)
GATHER_S = 0.05
#: the most saves' counters a gathering send waits for before it goes
GATHER_JOBS = 256


class CounterSender:
    """A sender thread for ``send_jobs([(increments, detect), ...])`` (see the module docstring).

    ``weigh(increments)``: a job's bytes for the back-pressure bound (default :func:`job_bytes`).

    ``send_jobs`` must not raise for a backend failure (it tallies it); anything it raises is
    swallowed here so the sender outlives it.
    """

    def __init__(self, send_jobs, max_pending=MAX_PENDING_JOBS, gather_s=0.0, max_pending_bytes=MAX_PENDING_BYTES,
                 weigh=None):
        self._send_jobs = send_jobs
        self._max_pending = max_pending
        self._max_pending_bytes = max_pending_bytes
        self._pending_bytes = 0  # of the jobs waiting (not those being sent)
        self._weigh = weigh or job_bytes
        self._gather_s = gather_s
        self._settling = 0  # settle() calls waiting: they end a gathering wait
        self._jobs = []  # (increments, detect, bytes)
        self._handed = 0  # jobs handed over, ever
        self._sent = 0  # jobs whose send ended (sent or failed), ever
        self._closed = False
        self._cond = threading.Condition()
        self._thread = None

    def submit(self, increments, detect=None):
        """Hand a save's increments (and its detection, or None) to the sender; return at once
        (or, with the queue full, once the sender has taken enough of it).

        A job heavier than the whole bound still goes, alone, once the queue is empty.  If the
        sender closes while this save waits for room, the save sends its increments itself."""
        size = self._weigh(increments)
        with self._cond:
            if self._closed:
                raise RuntimeError("the counter sender is closed")
            self._cond.wait_for(lambda: self._closed or self._has_room(size))
            if not self._closed:
                self._jobs.append((increments, detect, size))
                self._pending_bytes += size
                self._handed += 1
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="counter-sender", daemon=True)
                    self._thread.start()
                self._cond.notify_all()
                return
        # closed while this save waited: its thread has gone or is going, so the job is sent here
        self._send_jobs([(increments, detect)])

    def _has_room(self, size):
        if not self._jobs:
            return True
        return len(self._jobs) < self._max_pending and self._pending_bytes + size <= self._max_pending_bytes

    def settle(self):
        """Wait until every job handed over before this call has been sent (or has failed)."""
        with self._cond:
            target = self._handed
            self._settling += 1
            self._cond.notify_all()
            try:
                self._cond.wait_for(lambda: self._sent >= target)
            finally:
                self._settling -= 1

    @property
    def pending(self):
        """Jobs handed over and not yet sent."""
        with self._cond:
            return self._handed - self._sent

    def close(self):
        """Send what is pending, then stop the thread.  Idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self):
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._closed)
                if self._gather_s:
                    self._cond.wait_for(lambda: (self._closed or self._settling
                                                 or len(self._jobs) >= GATHER_JOBS), self._gather_s)
                if not self._jobs:
                    return  # closed, and everything sent
                jobs, self._jobs = [(inc, detect) for inc, detect, _size in self._jobs], []
                self._pending_bytes = 0
                self._cond.notify_all()  # room for blocked submitters
            try:
                self._send_jobs(jobs)
            except Exception:  # noqa: BLE001 - the sender outlives any failure; rollup repairs counts
                log.exception("live counters of %d saves not sent (the next rollup repairs them)", len(jobs))
            finally:
                with self._cond:
                    self._sent += len(jobs)
                    self._cond.notify_all()


def job_bytes(increments):
    """What a job's increments hold in memory, about (rows and columns plus a fixed overhead)."""
    return sum(len(inc.row) + len(inc.column) + INCREMENT_OVERHEAD for inc in increments)
