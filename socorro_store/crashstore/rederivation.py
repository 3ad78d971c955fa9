"""Deriving again, by the deriver's own batches: a day (``rollup``'s repair) and the queue sizes
(``reconcile-queue`` on a cut-over store).  A mixin of :class:`~.counter_deriver.CounterDeriver`:
both hold its lease and write through its fenced journal, so they never race its passes.
"""

from datetime import timedelta

from ..errors import BackendUnavailable
from ..schema import derived_keys as D
from ..schema import keys as K
from ..schema.specs import SALTS
from .contributions import facts_of, waiting_in
from .counters import QUEUE_SUFFIXES, read_counters
from .cut_over import ROW_COLUMNS


class Rederivation:
    """``rederive_day`` and ``rederive_queues`` of a :class:`~.counter_deriver.CounterDeriver`."""

    def rederive_day(self, day, timeout=60.0):
        """Derive every crash submitted on ``day`` (a date) again from its row, as if each had
        a record: ``rollup``'s repair, under the day's admission (``admitted`` of this deriver:
        a crash counted under a value the day no longer admits moves to ``##other##``, and
        back).  Waits for the lease up to ``timeout`` seconds; returns the crashes read."""
        read = 0
        with self._lock:
            self._wait_for_lease(timeout)
            for id_day in (day, day + timedelta(days=1)):  # an id may be dated the day after its submission
                for salt in SALTS:
                    prefix = K.crash_day_prefix(salt, id_day)
                    start = prefix
                    while True:  # a page at a time: memory stays one batch of rows
                        page = list(self.backend.scan(K.CRASH_REPORTS, start=start, stop=prefix + b"\xff",
                                                      columns=ROW_COLUMNS, limit=self.batch))
                        batch = {}
                        for _row, cells in page:
                            facts = facts_of(cells)
                            if K.COL_OOID in cells and facts is not None and facts["t"][:10] == day.isoformat():
                                batch[cells[K.COL_OOID].decode("ascii", "replace")] = (cells, [])
                        read += self._rederive(batch)
                        if len(page) < self.batch:
                            break
                        start = page[-1][0] + b"\x00"
        return read

    def rederive_queues(self, timeout=60.0):
        """Set the queue sizes (``deletes_X``, so that ``inserts_X - deletes_X`` is the size) to
        the crashes waiting in each queue by the facts this deriver counted, once caught up,
        under the lease and through the journal like a batch: ``reconcile-queue`` on a cut-over
        store.  Needed only after an upgrade from a version whose saves moved them.  A priority
        request pending since before that upgrade is left out (its facts do not say it): it
        leaves the count it never entered when served.  Returns ``{"before", "after",
        "corrected"}``."""
        self.catch_up(timeout)
        sizes = {"standard": 0, "legacy": 0, "priority": 0}
        with self._lock:
            self._wait_for_lease(timeout)
            for row, cells in self.backend.scan(K.DERIVED, columns=[D.COL_COUNTED]):
                if D.is_counted_row(row):  # not the mark, the lease or a hang pair's
                    for queue in waiting_in(D.decode_facts(cells.get(D.COL_COUNTED))):
                        sizes[queue] += 1
            live = read_counters(self.backend, K.METRICS, K.QUEUE_ROW)
            before, cells = {}, []
            for queue, suffix in QUEUE_SUFFIXES.items():
                inserts, deletes = live.get("inserts_" + suffix, 0), live.get("deletes_" + suffix, 0)
                before[queue] = inserts - deletes
                if before[queue] != sizes[queue]:
                    cells.append((K.METRICS, K.QUEUE_ROW, K.counter_column("deletes_" + suffix), inserts - sizes[queue]))
            if cells and not self._put_journal(D.encode_journal(cells, [], [], [])):
                raise BackendUnavailable("the derivation lease was lost while setting the queue sizes")
            if cells:
                self._journaled = True
                self._apply_journaled(cells, [], [])
        return {"before": before, "after": sizes, "corrected": len(cells)}

    def _rederive(self, batch):
        n = len(batch)
        if batch and not (self.lease.hold() and self._derive(dict(batch))):
            raise BackendUnavailable("the derivation lease was lost while deriving again")
        batch.clear()
        return n
