"""Deriving again, by the deriver's own batches: a day (``rollup``'s repair) and the queue sizes
(``reconcile-queue`` on a cut-over store).  A mixin of :class:`~.counter_deriver.CounterDeriver`:
both hold its lease and write through its fenced journal, so they never race its passes.
"""

from datetime import timedelta

from ..backends import Increment
from ..errors import BackendUnavailable
from . import cell_repair, change_records
from ..schema import derived_keys as D
from ..schema import keys as K
from ..schema.specs import SALTS
from .contributions import capped, facts_of, waiting_in
from .counters import QUEUE_SUFFIXES, coalesce, read_counters, slack_increments
from .cut_over import ROW_COLUMNS

#: records read to find the crashes of a repaired day still waiting: more waiting, no repair
WAITING_READ = 10_000


class Rederivation:
    """``rederive_day`` and ``rederive_queues`` of a :class:`~.counter_deriver.CounterDeriver`."""

    def rederive_day(self, day, found=None, detail_gone=None, timeout=60.0):
        """Derive every crash submitted on ``day`` (a date) again from its row, as if each had
        a record: ``rollup``'s repair, under the day's admission (``admitted`` of this deriver:
        a crash counted under a value the day no longer admits moves to ``##other##``, and
        back).  Waits for the lease up to ``timeout`` seconds.

        ``found``: ``{(table, row, column): value}``, the deriver's cells the roll-up's recount
        of the day found at another value; in the same hold of the lease, those still wrong
        once the crashes are derived again are set right where :mod:`.cell_repair` allows
        (``detail_gone(table, row, column)``: a cell ``expire`` may have deleted, which no sum
        counts on and none writes).
        Returns ``{"read": crashes read, "repaired": cells set to the recount, "coarse": month
        and year cells set to their sums}``."""
        read, counted = 0, cell_repair.CountedDay(found or {})
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
                                if counted:  # what the crash is counted under once derived again
                                    counted.add(capped(facts, self.admitted))
                        read += self._rederive(batch)
                        if len(page) < self.batch:
                            break
                        start = page[-1][0] + b"\x00"
            repaired, coarse = self._repair_cells(day, found, counted, detail_gone or (lambda *key: False))
        return {"read": read, "repaired": repaired, "coarse": coarse}

    def _repair_cells(self, day, found, counted, detail_gone):
        """Set the cells of ``found`` whose recount equals what ``counted`` (a
        :class:`~.cell_repair.CountedDay`) says the deriver counts them at, and the month and
        year cells above the day cells so set to the sums of their finer cells; through the
        journal, under the lease held.  A day's unique counts are set as they are; any other
        unique count follows its signature cells (the deriver's rule)."""
        if not counted:
            return 0, 0
        # the saves go on while the job holds the lease: their records wait, mostly of today
        records, _resume, full = change_records.read_records(self.backend, K.COL_CHANGE_DERIVE, b"", WAITING_READ)
        if full:
            return 0, 0  # derivation far behind: the next roll-up repairs
        id_days = {day.strftime("%y%m%d"), (day + timedelta(days=1)).strftime("%y%m%d")}
        of_day = [cid for cid in records if cid[-6:] in id_days]  # an id is dated its day or the next
        if of_day:
            waiting = self.backend.get_rows(K.DERIVED, [D.counted_row(cid) for cid in of_day], columns=[D.COL_COUNTED])
            for cells in waiting.values():
                counted.drop_waiting(D.decode_facts(cells.get(D.COL_COUNTED)))
        counted.add_pairs(self.backend)
        agreed = {key: n for key, n in counted.totals().items() if found[key] == n}
        if not agreed:
            return 0, 0
        current = cell_repair.read_cells(self.backend, agreed)
        new = {key: n for key, n in agreed.items() if current[key] != n}
        plan = [(coarse, finer) for key in new for coarse, finer in cell_repair.coarser(key)
                if not any(detail_gone(*cell) for cell in [coarse, *finer])]
        coarse_values = {}
        if plan:
            read = cell_repair.read_cells(self.backend, {cell for coarse, finer in plan for cell in [coarse, *finer]})
            values = {**read, **new}
            for coarse, finer in plan:  # a month before its year: the year sums its months as set
                values[coarse] = sum(values[cell] for cell in finer)
                if values[coarse] != read[coarse]:
                    coarse_values[coarse] = values[coarse]
            current.update(read)
        # an hour's or the day's unique count agreed on is set as it is, whatever signature
        # cells the repair takes to or from zero (which move it by the deriver's rule)
        unique = {key: n for key, n in agreed.items() if key[2] == cell_repair.UNIQUE_COLUMN}
        changes = [Increment(*key, n - current[key]) for key, n in {**new, **coarse_values}.items() if key not in unique]
        cells = []
        if changes:
            changes = coalesce(changes + slack_increments(changes, in_row=True))
            cells, _foreign = self._absolute(changes)
        moved = {tuple(cell[:3]) for cell in cells}
        cells = [cell for cell in cells if tuple(cell[:3]) not in unique] + \
            [(*key, n) for key, n in unique.items() if key in moved or n != current[key]]
        if not cells:
            return 0, 0
        if not self._put_journal(D.encode_journal(cells, [], [], [])):
            raise BackendUnavailable("the derivation lease was lost while repairing cells")
        self._journaled = True
        self._apply_journaled(cells, [], [])
        return len(new), len(coarse_values)

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

