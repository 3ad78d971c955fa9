"""How a queue is read: salted merged scans, and empty polls for one call.

:func:`queue_rows` reads a queue in (time, crash id) order across its 16 salt buckets (see
:mod:`.queue`); :func:`merged_scan` merges the bucket scans; :func:`readable_rows` skips rows no
key layout describes.

Empty polls.  Processors poll an idle queue often, and a poll is a scan: on HBase's Thrift1 two
round trips (open, one fetch).  The queue counters are one read: ``crash_report_queues`` (ours,
inserts - deletes) and Socorro's ``crash_report_queue`` (``current_*_size``, moved by Socorro's
collectors and processors when they run beside us).  :class:`EmptyPollGate` lets a poll end on
that read when both say the queue holds nothing.  The counters trail the queue rows (a pointer
is written before its counter moves, another store may coalesce its increments) and can be wrong
(an increment lost with its process, until ``reconcile-queue`` or ``rollup``), so they are
trusted only for ``rescan_seconds`` after a real scan, and never after this store queued a crash
itself: a counter that is wrong delays a crash by at most ``rescan_seconds``, never loses it.

Not on a cut-over store: its queue counters are derived, so they trail every other process's
saves by the derivation's lag, and a poll that ends on them would answer "empty" while crashes
wait (a processor draining the queue would stop short).  An empty poll there is a scan.
"""

import heapq
import logging
import time

from ..checks import is_number
from ..errors import InvalidArgument
from ..schema.keys import METRICS, QUEUE_ROW, SALTS, counter_column, decode_counter, time_index_order, time_index_range
from ..schema.stored import SOCORRO_QUEUE_ROW
from . import cut_over

DEFAULT_PAGE_SIZE = 256
#: Seconds an empty poll may trust the queue counters after a real scan (0: always scan).
DEFAULT_RESCAN_SECONDS = 10.0
#: queue -> (our counter names: inserts, deletes), Socorro's size counter or None
_COUNTERS = {
    "standard": (("inserts_unprocessed", "deletes_unprocessed"), "current_unprocessed_size"),
    "legacy": (("inserts_unprocessed_legacy", "deletes_unprocessed_legacy"), "current_legacy_unprocessed_size"),
    "priority": (("inserts_unprocessed_priority", "deletes_unprocessed_priority"), None),
}
_log = logging.getLogger("socorro_store")


def merged_scan(backend, table, prefix=b"", columns=None, start=None, end=None,
                page_size=DEFAULT_PAGE_SIZE):
    """Rows of the 16 salt buckets under ``prefix``, merged in (time, crash id) order.

    ``start``/``end`` bound the time part (``end`` exclusive).  Each bucket is one paged scan;
    :func:`heapq.merge` pulls one row at a time from each, so memory stays within 16 pages.
    """
    iterators = []
    for salt_char in SALTS:
        low, high = time_index_range(salt_char, start, end, prefix)
        iterators.append(backend.scan(table, start=low, stop=high, columns=columns,
                                      page_size=page_size))
    return heapq.merge(*iterators, key=lambda item: time_index_order(item[0], prefix))


def queue_rows(backend, table, prefix=b"", columns=None, page_size=DEFAULT_PAGE_SIZE):
    """Every row of a queue in (time, crash id) order, with at most 16 pages in memory.

    One scan reads up to 16 pages over the whole key range of the 16 buckets; if the queue is
    that short, its rows are sorted in memory.  Otherwise the 16 bucket scans are merged
    (:func:`merged_scan`), and the probe's rows are dropped.  Rows between the buckets (keys
    whose first byte after ``prefix`` is not a salt) are not queue rows and are skipped, as the
    merged scan would.
    """
    cap = len(SALTS) * page_size
    low = time_index_range(SALTS[0], prefix=prefix)[0]
    high = time_index_range(SALTS[-1], prefix=prefix)[1]
    rows = list(backend.scan(table, start=low, stop=high, columns=columns, limit=cap + 1, page_size=cap + 1))
    if len(rows) > cap:
        del rows
        return merged_scan(backend, table, prefix, columns=columns, page_size=page_size)
    salt_at = len(prefix)
    rows = [item for item in rows if item[0][salt_at:salt_at + 1] in _SALT_BYTES]
    rows.sort(key=lambda item: time_index_order(item[0], prefix))
    return iter(rows)


_SALT_BYTES = frozenset(salt_char.encode("ascii") for salt_char in SALTS)


def readable_rows(rows, parse, table):
    """``(row, cells, parse(row))`` of each scanned row whose key ``parse`` can read.

    An index row no layout describes (written by a bug, by hand, or by an older version that
    accepted a crash id ending in a newline) is skipped with a warning, never raised: one
    unreadable row must not take down every reader of its day.  ``verify-indexes`` reports
    such rows (``malformed``) and ``--repair`` deletes them.
    """
    for row, cells in rows:
        try:
            parsed = parse(row)
        except InvalidArgument as exc:
            _log.warning("skipped an unreadable row of %s (verify-indexes reports it): %s", table, exc)
            continue
        yield row, cells, parsed


class EmptyPollGate:
    """Whether a queue may be taken as empty without a scan (see the module docstring).

    :meth:`looks_empty` costs nothing (False) while a scan is due: none yet, ``rescan_seconds``
    since the last, or this store queued a crash since (:meth:`note_queued`); otherwise one read
    of the two counter rows (after ``settle_counters()``, which waits for the increments this
    store sends in the background).  Call :meth:`note_scan` when a scan of the queue starts.
    """

    def __init__(self, backend, queue, rescan_seconds=DEFAULT_RESCAN_SECONDS, settle_counters=None):
        if not is_number(rescan_seconds) or rescan_seconds < 0:
            raise InvalidArgument(f"rescan_seconds must be a number >= 0: {rescan_seconds!r}")
        (inserts, deletes), socorro = _COUNTERS[queue]
        self._ours = (counter_column(inserts), counter_column(deletes))
        self._socorro = counter_column(socorro) if socorro else None
        self.backend, self.rescan_seconds = backend, rescan_seconds
        # the store's counters sent in the background: its own pending increments are waited for
        # before the counters are trusted (a crash it queued is counted before it is believed gone)
        self._settle_counters = settle_counters
        self._scanned_at = None
        self._queued_here = True

    def note_queued(self):
        """This store wrote a queue pointer (after the write): the next poll scans."""
        self._queued_here = True

    def note_scan(self):
        """A scan of the queue starts now: it sees every pointer written before this call."""
        self._queued_here = False
        self._scanned_at = time.monotonic()

    def note_scan_failed(self):
        """The scan noted last failed before it ended: it proved nothing, so the next poll scans
        (a crash this store queued must not wait for the rescan interval)."""
        self._queued_here = True

    def looks_empty(self):
        """True when the counters say the queue holds nothing and may be trusted (never on a
        cut-over store: see the module docstring)."""
        if not self.rescan_seconds or self._queued_here or self._scanned_at is None or \
                time.monotonic() - self._scanned_at >= self.rescan_seconds:
            return False
        if cut_over.enabled(self.backend):
            return False
        if self._settle_counters is not None:
            self._settle_counters()
        columns = list(self._ours) + ([self._socorro] if self._socorro else [])
        rows = self.backend.get_rows(METRICS, [QUEUE_ROW, SOCORRO_QUEUE_ROW], columns=columns)

        def count(row, column):
            value = rows.get(row, {}).get(column, b"")
            return decode_counter(value) if len(value) == 8 else 0

        ours = count(QUEUE_ROW, self._ours[0]) - count(QUEUE_ROW, self._ours[1])
        socorro = count(SOCORRO_QUEUE_ROW, self._socorro) if self._socorro else 0
        return ours <= 0 and socorro <= 0
