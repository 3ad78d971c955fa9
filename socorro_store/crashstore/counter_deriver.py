"""The deriver: the counters of a cut-over store, derived from the crash rows by one writer.

On a store holding the cut-over mark (:func:`enabled`), a save writes no metrics, signature or
ranking counter.  It writes a change record (``change:derive``, :mod:`.change_records`) with
its pointers, before its crash row, and stamps the crash row with it (``flags:changed``), as
processed saves already do for the search feed.  A deletion writes one (``D``) once its rows
are gone.  One process at a time, under the lease (``~derive/lease``), derives:

1. it reads up to :data:`BATCH` records, then the crash rows they name and what each crash is
   counted under now (``derived:counted``, :mod:`~socorro_store.schema.derived_keys`);
2. a record whose save has landed (the row holds its stamp or a later one), a deletion's, or one
   older than :data:`PENDING_SECONDS` (a save that failed after writing it) is ready; any other
   is a save in flight and waits;
3. for each crash with a ready record, the facts of its row as it is now
   (:func:`~.contributions.facts_of`, capped by the registry) are compared with the facts it is
   counted under; the difference, summed over the batch, is the batch's change of every counter
   (slack rows of closed days included);
4. it reads those counters (the ones it does not know from its own writes in this hold,
   :mod:`.known_cells`; each row only its own columns), adds the change (an interval's
   ``unique_crash_signatures`` moves when one of its signature counters goes from 0 to
   positive or back), and writes the batch,
   absolute values, the crashes'
   new counted facts and the records consumed, to the lease row's journal, fenced by the lease
   (a check-and-put against its own lease value: a deriver that lost its lease writes nothing);
5. it applies the journal: the counter cells and counted facts are put, the records' marks
   deleted, in one ``mutate_tables``, with the moves of the pointers the facts imply (the
   signature and legacy time indexes, :func:`~.contributions.pointer_moves`): the saves of a
   cut-over store write neither.

Exact, whatever is killed when: a save's counts are in its crash row, and its record outlives it
until a batch that read the row after the record was written is applied.  A batch is applied
only from its journal, and the next lease holder applies the last journal again before anything
else: its values are absolute, and no other process writes those cells, so applying it twice
writes the same values.  Nothing is counted twice, and nothing is lost: a reprocessing moves the
crash from the facts it was counted under to its new ones, whoever saved what.

A process sees its own saves in the counters after :meth:`CounterDeriver.settle_own` (what
``settle()``, ``flush_counters()`` and the store's counter reads call): it derives inline when
the lease is free, or waits for the holder, never longer than its timeout.
"""

import logging
import os
import threading
import time

import msgpack

from ..backends import RowMutation
from ..errors import BackendError, BackendUnavailable, ConfigError, InvalidArgument, TableNotFound
from ..schema import change_keys as C
from ..schema import derived_keys as D
from ..schema import dimension_keys as DK
from ..schema import keys as K
from . import change_records
from .contributions import (capped, dequeue_moves, dequeued, facts_of, increments_of, pointer_moves, queue_moves,
                            registry_questions)
from .counters import UNIQUE_SIGNATURES, coalesce, slack_increments
from .cut_over import ROW_COLUMNS, enabled
from .dimensions import Dimensions
from .hang_pairs import derive_hang_pairs
from .known_cells import KnownCells
from .rederivation import Rederivation
from .row_lease import RowLease, new_holder

log = logging.getLogger(__name__)
#: the lease holder of this process's batch-job derivers (catching up, deriving a day or the
#: queues again), one at a time: a job's wish for the lease (:meth:`~.row_lease.RowLease.want`)
#: covers all of them, so ``rollup``'s catch-ups and re-derivations run back to back while the
#: saving processes' derivers stay away
_JOB_HOLDER = new_holder()
_job_lock = threading.RLock()

LEASE_SECONDS = 30.0
PENDING_SECONDS = 120.0
#: records read per pass
BATCH = 200
#: records read per pass while passes come back full (a backlog)
MAX_BATCH = 3200
IDLE_SECONDS = 0.5
#: record kinds of a crash whose rows are gone: a deletion (its counts taken back) and retention
#: (its counts stay)
DELETED, EXPIRED = b"D", b"E"
GONE = frozenset((DELETED, EXPIRED))
#: how long a deriver woken by a save (or busy with fewer records than a batch) waits for more
#: saves before its pass: a derived fact is visible about this much after its save, at most
#: twice this under a steady stream.  A pass costs its calls whatever it holds (about ten
#: writes on HBase, one per table and kind): half a second holds a batch at 200 crashes/s, and
#: keeps the median fact within about half a second (the target is 1 s)
COALESCE_SECONDS = 0.5
#: the lag (age of the oldest record waiting) beyond which saves wait for derivation (back pressure)
LAG_LIMIT_SECONDS = 30.0
#: how often a saving process looks at the lag (one bounded scan of the records)
LAG_CHECK_SECONDS = 5.0
#: the longest a save waits for derivation when the lag is beyond its limit
PRESSURE_WAIT_SECONDS = 5.0


#: ``background`` (the default) or ``inline``: whether a saving process derives from a thread of its own
DERIVE_ENV_VAR = "SOCORRO_DERIVE"


def derive_in_background():
    """Whether stores derive from a background thread: ``$SOCORRO_DERIVE`` (``background``, the
    default, or ``inline``: only ``settle()`` derives, for a process whose deriving a dedicated
    ``socorro-store derive`` worker does).  ConfigError for another value."""
    mode = os.environ.get(DERIVE_ENV_VAR, "background").strip().lower() or "background"
    if mode not in ("background", "inline"):
        raise ConfigError(f"{DERIVE_ENV_VAR} must be background or inline, not {mode!r}")
    return mode == "background"


def catch_up(backend, timeout=60.0):
    """Derive what is waiting now, inline when the lease is free, else by waiting for its
    holder (a batch job reading derived counters: ``rollup``); True once caught up, and at once
    on a store not cut over."""
    if not enabled(backend):
        return True
    with _job_lock:
        deriver = admitting_deriver(backend, Dimensions(), background=False, holder=_JOB_HOLDER)
        try:
            done = deriver.catch_up(timeout)
        finally:
            deriver.close()
    if not done:
        log.warning("derivation not caught up within %ss", timeout)
    return done


def admitting_deriver(backend, dimensions, background, holder=None):
    """A :class:`CounterDeriver` of ``backend`` capping by ``dimensions`` (a
    :class:`~.dimensions.Dimensions`), admitting new values by arrival."""
    return CounterDeriver(backend, dimensions.admitter(backend), background=background, holder=holder,
                          admit_many=lambda asked: dimensions.admit_many(backend, asked))


def rederive_queues(backend, timeout=60.0):
    """:meth:`CounterDeriver.rederive_queues` by a deriver of its own (``reconcile-queue`` on a
    cut-over store)."""
    with _job_lock:
        deriver = CounterDeriver(backend, lambda field, value, product: True, background=False, holder=_JOB_HOLDER)
        try:
            return deriver.rederive_queues(timeout)
        finally:
            deriver.close()


def rederive_day(backend, day, admitted, found=None, detail_gone=None):
    """:meth:`CounterDeriver.rederive_day` by a deriver of its own (``rollup``'s repair), capping
    by ``admitted(field, value, product)`` (the day's admission), setting right the cells of
    ``found`` it may (:mod:`.cell_repair`); ``{"read", "repaired", "coarse"}``, all 0 on a store
    not cut over."""
    if not enabled(backend):
        return {"read": 0, "repaired": 0, "coarse": 0}
    with _job_lock:
        deriver = CounterDeriver(backend, admitted, background=False, holder=_JOB_HOLDER)
        try:
            return deriver.rederive_day(day, found, detail_gone)
        finally:
            deriver.close()


def waiting(backend, limit=10_000):
    """``(records waiting, age in seconds of the oldest or None)`` for the deriver."""
    return change_records.records_waiting(backend, K.COL_CHANGE_DERIVE, limit)


UNIQUE_COLUMN = K.counter_column(UNIQUE_SIGNATURES)


def foreign_writes(backend):
    """``{"count", "last", "at"}``: the counter cells found written beside the store's derivers
    (:meth:`CounterDeriver._note_foreign`), count 0 when none ever was."""
    return decode_foreign(backend.get_row(K.DERIVED, D.FOREIGN_ROW, [D.COL_FOREIGN]).get(D.COL_FOREIGN))


def decode_foreign(raw):
    """The ``~derive/foreign`` record: ``{"count", "last", "at"}`` (count 0 without one)."""
    try:
        record = msgpack.unpackb(raw, raw=False) if raw else None
    except (ValueError, msgpack.UnpackException):
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("count"), int):
        return {"count": 0, "last": None, "at": None}
    return {"count": record["count"], "last": record.get("last"), "at": record.get("at")}


def _read_counter(raw):
    if raw is not None and len(raw) == 8:
        return K.decode_counter(raw)
    return 0  # no cell, or not a counter: the deriver's value replaces it


class CounterDeriver(Rederivation):
    """The deriver of one store (see the module docstring).

    ``admitted(field, value, product)``: the registry's cap (a store's
    :class:`~.dimensions.Dimensions`); ``admit_many([(field, value, product)])``, if given, is
    called first with every question a batch will ask it (:meth:`~.dimensions.Dimensions.admit_many`:
    the new values of a batch admitted in a few calls).  ``background``: run a deriving thread.
    """

    def __init__(self, backend, admitted, background=True, holder=None, batch=BATCH,
                 lease_seconds=LEASE_SECONDS, pending_seconds=PENDING_SECONDS, admit_many=None):
        self.backend, self.admitted, self.admit_many = backend, admitted, admit_many
        self.lease = RowLease(backend, K.DERIVED, D.LEASE_ROW, D.COL_LEASE, holder, lease_seconds,
                              extra_columns=[D.COL_JOURNAL, D.COL_LAST_WRITER], wanted_column=D.COL_WANTED)
        self.batch, self.pending_ns = batch, int(pending_seconds * 1e9)
        self._size, self._full = batch, False  # the last pass's size, and whether it came back full
        self._resume = b""
        self._lock = threading.Lock()  # one pass at a time in this process
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._own = b""  # the latest stamp this process's saves wrote
        self._journaled = False  # a batch's journal is in the lease row (named crashes)
        self.lag_limit_s, self._lag_checked, self._lagging = LAG_LIMIT_SECONDS, 0.0, False
        self.throttled = 0  # saves that waited for derivation (back pressure)
        self._own_lock = threading.Lock()
        self.passes = self.derived = self.replays = self.failures = 0
        self._known = KnownCells()  # the cells this holder wrote or read in this hold
        self.cells_read = 0  # counter cells read to derive (the known ones are not)
        self.last_error = None
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._run, name="counter-deriver", daemon=True)
            self._thread.start()

    # -- one pass -------------------------------------------------------------------------
    def _hold_lease(self):
        held = self.lease.held
        if not self.lease.hold():
            return False
        if not held:  # taken (not renewed): the last holder's batch may be half applied
            if self.lease.taken_with.get(D.COL_LAST_WRITER) != self.lease.holder:
                self._known.forget()  # another holder wrote since this one's last batch
            self._known.verify_next()
            journal = D.decode_journal(self.lease.taken_with.get(D.COL_JOURNAL))
            if journal is not None:  # a replay failing part way is replayed again, as a batch is
                self._apply_journaled(*journal)
                self.replays += 1
                self._journaled = True
        return True

    def _read_records(self):
        # a backlog grows the pass (up to MAX_BATCH): a pass costs about the same calls for 200
        # records as for 2,000, so full passes would otherwise cap derivation at a batch a pass
        self._size = min(MAX_BATCH, self._size * 2) if self._full else self.batch
        records, self._resume, self._full = change_records.read_records(self.backend, K.COL_CHANGE_DERIVE,
                                                                        self._resume, self._size)
        return records

    def _ready(self, records, rows):
        """``{crash id: (cells or None when gone, [record keys ready])}``, the count kept, and the
        crashes gone by retention (records ``E`` only: their counts stay, their queues move)."""
        now, ready, kept, expired = time.time_ns(), {}, 0, set()
        for crash_id, recs in records.items():
            cells = rows.get(K.crash_row_key(crash_id), {})
            old = [now - C.stamp_time_ns(stamp) > self.pending_ns for _key, stamp, _kind in recs]
            kinds = {kind for _key, _stamp, kind in recs}
            if K.COL_OOID in cells:
                landed = cells.get(K.COL_CHANGED, b"")
                keys = [key for (key, stamp, kind), aged in zip(recs, old)
                        if kind in GONE or stamp <= landed or aged]
            else:  # deleted, or a raw save whose row is still in flight
                deleted = bool(kinds & GONE)
                keys = [key for (key, _stamp, _kind), aged in zip(recs, old) if deleted or aged]
                cells = None
                if EXPIRED in kinds and DELETED not in kinds:
                    expired.add(crash_id)
            kept += len(recs) - len(keys)
            if keys:
                ready[crash_id] = (cells, keys)
        return ready, kept, expired

    def derive_pass(self):
        """One pass over up to ``batch`` records; ``{"records", "derived", "kept"}``, or None
        when another process holds the lease."""
        with self._lock:
            if not self._hold_lease():
                return None
            records = self._read_records()
            out = {"records": sum(len(r) for r in records.values()), "derived": 0, "kept": 0}
            if not records:
                self._clear_journal()
                return out
            self.passes += 1
            rows = self.backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(cid) for cid in records],
                                         columns=ROW_COLUMNS)
            ready, out["kept"], expired = self._ready(records, rows)
            # in the order the saves were made: the registry admits values by arrival
            ready = dict(sorted(ready.items(), key=lambda item: min(item[1][1])[-C.STAMP_LEN:]))
            if ready and not self._derive(ready, expired):
                return None  # the lease was lost: the new holder derives these records
            out["derived"] = len(ready)
            return out

    def _derive(self, ready, expired=frozenset()):
        """Bring the counters of ``ready`` (``{crash id: (cells or None when gone, [record keys
        consumed])}``) to what their rows hold (steps 3 to 5 of the module docstring); False
        when the lease was lost (nothing written).  A crash of ``expired`` (gone by retention)
        keeps its counts: only its queues move, and what it was counted under goes."""
        counted = self.backend.get_rows(K.DERIVED, [D.counted_row(cid) for cid in ready], columns=[D.COL_COUNTED])
        facts = {crash_id: facts_of(cells) if cells is not None else None for crash_id, (cells, _keys) in ready.items()}
        if self.admit_many is not None:
            self.admit_many(registry_questions(facts.values()))
        changes, changed, pointers, retired, exits = [], [], [], [], {False: [], True: []}
        for crash_id in ready:
            was = D.decode_facts(counted.get(D.counted_row(crash_id), {}).get(D.COL_COUNTED))
            now = capped(facts[crash_id], self.admitted)
            if now == was:
                continue
            changes += queue_moves(was, now)
            if crash_id in expired:
                retired.append((crash_id, None))
                continue
            changes += increments_of(now) + increments_of(was, -1)
            changed.append((crash_id, was, now))
            pointers += pointer_moves(crash_id, was, now)
            left = dequeued(was, now)
            if left is not None:
                exits[left[0]].append((crash_id, *left[1:]))
        pointers += dequeue_moves(exits)
        pairs, hang_rows = derive_hang_pairs(self.backend, changed, {cid: cells for cid, (cells, _k) in ready.items()})
        changes += pairs
        pointers += hang_rows
        moved = [(crash_id, now) for crash_id, _was, now in changed] + retired
        consumed = [key for _cells, keys in ready.values() for key in keys]
        if not moved and not consumed:
            return True
        changes = coalesce(changes)
        changes = coalesce(changes + slack_increments(changes, in_row=True))
        cells, foreign = self._absolute(changes)
        if not self._put_journal(D.encode_journal(cells, moved, consumed, pointers)):
            return False
        self._journaled = True
        self._apply_journaled(cells, moved, consumed, pointers)
        if foreign:
            self._note_foreign(foreign)
        self.derived += len(ready)
        return True

    def _apply_journaled(self, cells, moved, consumed, pointers=()):
        """Apply a batch whose journal is in the lease row.  If that fails part way, the lease is
        taken again before the next batch, which applies the journal whole (:meth:`_hold_lease`):
        a batch reading half-applied cells would count some crashes twice, or lose them."""
        try:
            self._apply(cells, moved, consumed, pointers)
        except BaseException:
            self.lease.lapse()
            raise
        self._known.remember(cells)

    def _put_journal(self, journal):
        """Put a batch's journal, fenced by the lease (False: lost, nothing written), naming this
        holder as the last to write: a holder taking the lease back from itself knows that no
        other wrote the deriver's cells in between (:meth:`_note_foreign`)."""
        return self.lease.put_fenced({D.COL_JOURNAL: journal, D.COL_LAST_WRITER: self.lease.holder})

    def _clear_journal(self):
        """Once idle, empty the journal: it names the crashes of the last batch (a deletion's
        too), and nothing is left to replay."""
        if self._journaled and self._put_journal(b""):
            self._journaled = False

    def _wait_for_lease(self, timeout):
        """Hold the lease within ``timeout`` seconds, asking its holder for it (a batch job's
        derivation: the saving processes' derivers give it up at their next renewal)."""
        deadline, wished = time.monotonic() + timeout, 0.0
        while True:
            if time.monotonic() - wished > self.lease.term_ns / 3e9:  # the wish outlives the wait
                self.lease.want()
                wished = time.monotonic()
            if self._hold_lease():
                return
            if time.monotonic() > deadline:
                raise BackendUnavailable(f"the derivation lease stayed held elsewhere for {timeout:g}s")
            time.sleep(0.05)

    def _absolute(self, changes):
        """``([(table, row, column, value)], foreign)``: each changed counter's current value
        plus its change, and the unique signatures of each interval whose signature count went
        from nothing to something (or back): a signature counts in an interval's
        ``unique_crash_signatures`` exactly while its interval counter is positive.

        A cell this holder knows (:mod:`.known_cells`) is not read again, except by a batch
        that verifies: ``foreign`` then lists the known cells read at another value,
        ``[(table, row, column, known, read)]``: written by someone else."""
        unique = {(K.METRICS, row, UNIQUE_COLUMN) for inc in changes if inc.table == K.SIGNATURES
                  for row in [DK.plain_signature_interval(inc.column)] if row is not None}
        keys = {(inc.table, inc.row, inc.column) for inc in changes} | unique
        known, verify = self._known.lookup(keys)
        to_read = keys if verify else keys - known.keys()
        wanted = {}
        for table, row, column in to_read:
            wanted.setdefault(table, {}).setdefault(row, []).append(column)
        found = {}

        def reader(table, columns_by_row):
            return lambda: found.__setitem__(table, self.backend.get_rows_columns(table, columns_by_row))

        self.backend.overlap([reader(table, columns_by_row) for table, columns_by_row in wanted.items()])
        read = {(table, row, column): _read_counter(found[table].get(row, {}).get(column))
                for table, row, column in to_read}
        self.cells_read += len(read)
        foreign = self._known.foreign(known, read)
        current = {**known, **read}
        values = {}
        for inc in changes:
            key = (inc.table, inc.row, inc.column)
            was = current[key]
            values[key] = was + inc.amount
            interval = DK.plain_signature_interval(inc.column) if inc.table == K.SIGNATURES else None
            moved = (values[key] > 0) - (was > 0)
            if interval is not None and moved:
                cell = (K.METRICS, interval, UNIQUE_COLUMN)
                values[cell] = values.get(cell, current[cell]) + moved
        self._known.remember([(*key, current[key]) for key in unique - values.keys()])  # read, not changed
        return [(*key, value) for key, value in values.items()], foreign

    def _note_foreign(self, foreign):
        """Cells of this deriver changed by someone else between two of its batches: an older
        version's saves still incrementing beside it (or a process that has not seen the cut-over
        mark yet), whose counts land on top of the deriver's.  Logged, and kept in
        ``~derive/foreign`` for ``derive status`` and ``ping``: stop those writers, and repair
        the counters as docs/derivation.md says (the way back, ``rollup --since``, cut-over)."""
        table, row, column, written, read = foreign[0]
        last = f"{table} {row!r} {column!r}: wrote {written}, read {read}"
        log.error("%d counter cell(s) written beside the deriver (an older version still incrementing?), "
                  "e.g. %s", len(foreign), last)
        found = foreign_writes(self.backend)
        record = {"count": found["count"] + len(foreign), "last": last, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                           time.gmtime())}
        self.backend.mutate_rows(K.DERIVED, [RowMutation(D.FOREIGN_ROW, {D.COL_FOREIGN: msgpack.packb(record)})])

    def _apply(self, cells, moved, consumed, pointers=()):
        """Put a batch (see :func:`~socorro_store.schema.derived_keys.encode_journal`)."""
        puts = {}
        for table, row, column, value in cells:  # a counter down to 0 goes: no empty column stays
            puts.setdefault(table, {}).setdefault(row, {})[column] = K.encode_counter(value) if value else None
        mutations = {table: [RowMutation(row, {c: v for c, v in values.items() if v is not None},
                                         deletes=[c for c, v in values.items() if v is None])
                             for row, values in rows.items()]
                     for table, rows in puts.items()}
        mutations[K.DERIVED] = [RowMutation(D.counted_row(cid), {D.COL_COUNTED: D.encode_facts(facts)})
                                if facts is not None else RowMutation(D.counted_row(cid), delete_row=True)
                                for cid, facts in moved]
        mutations[K.CHANGES] = [RowMutation(key, deletes=[K.COL_CHANGE_DERIVE]) for key in consumed]
        for table, row, puts, deletes in pointers:
            mutations.setdefault(table, []).append(RowMutation(row, puts or {}, deletes=deletes or [],
                                                               delete_row=not puts and not deletes))
        self.backend.mutate_tables({table: m for table, m in mutations.items() if m})

    # -- catching up ----------------------------------------------------------------------
    def noted(self, stamp):
        """A save of this process wrote a record with ``stamp``: :meth:`settle_own` waits for
        it, and the background deriver passes at once."""
        with self._own_lock:
            if stamp > self._own:
                self._own = stamp
        self._wake.set()

    def press(self):
        """Back pressure, called after a save: when the oldest record waiting is older than
        ``lag_limit_s`` (looked at every :data:`LAG_CHECK_SECONDS`), the save waits until this
        process's saves are derived, at most :data:`PRESSURE_WAIT_SECONDS`: saves slow down to
        what derivation sustains rather than let derived data fall hours behind."""
        now = time.monotonic()
        if now - self._lag_checked >= LAG_CHECK_SECONDS:
            self._lag_checked = now
            age = waiting(self.backend, limit=1000)[1]
            self._lagging = age is not None and age > self.lag_limit_s
        if self._lagging:
            self.throttled += 1
            self.settle_own(PRESSURE_WAIT_SECONDS)

    def settle_own(self, timeout=30.0):
        """Derive until every record of this process's saves so far is consumed (True), or
        ``timeout`` passes (False).  A process that saved nothing returns at once."""
        with self._own_lock:
            target = self._own
        if not target:
            return True
        done = self.catch_up(timeout, target)
        if done:
            with self._own_lock:
                if self._own == target:
                    self._own = b""
        return done

    def catch_up(self, timeout=30.0, target=None):
        """Derive until no ready record made at or before ``target`` (a stamp; default now)
        is left (True), or ``timeout`` seconds pass (False).  While another process holds the
        lease, wait for it; take the lease over if it expires."""
        try:
            return self._catch_up(timeout, target or C.new_stamp())
        finally:
            if self._thread is None:  # no thread of this process derives later: let others
                self._release()

    def _release(self):
        with self._lock:
            self.lease.release({D.COL_JOURNAL: b""} if self._journaled else None)
            self._journaled = False

    def _catch_up(self, timeout, target):
        deadline = time.monotonic() + timeout
        while True:
            result = self.derive_pass()
            if result is None:
                if not self._waiting_until(target):
                    return True
            elif not self._resume:  # a whole sweep of the records
                if result["records"] == result["kept"]:
                    return True  # only saves still in flight are left: not ours to wait for
                if not self._full and not self._waiting_until(target):
                    return True  # what is left was made after the target
            if time.monotonic() > deadline:
                return False
            if result is None:
                time.sleep(0.05)

    def _waiting_until(self, target):
        for key, _cells in self.backend.scan(K.CHANGES, stop=C.RECORDS_STOP, columns=[K.COL_CHANGE_DERIVE],
                                             limit=10_000):
            try:
                if C.parse_change_record_key(key)[1] <= target:
                    return True
            except InvalidArgument:
                continue
        return False

    def status(self):
        """``{"waiting", "lag_seconds", "deriving", "passes", "failures", "last_error",
        "throttled", "foreign_writes", "last_foreign_write"}`` (the last two from
        ``~derive/foreign``: cells written beside any deriver of the store, ever)."""
        count, age = waiting(self.backend)
        foreign = foreign_writes(self.backend)
        return {"waiting": count, "lag_seconds": None if age is None else round(age, 3), "deriving": self.lease.held,
                "passes": self.passes, "failures": self.failures, "last_error": self.last_error,
                "throttled": self.throttled, "foreign_writes": foreign["count"],
                "last_foreign_write": foreign["last"]}

    # -- the background deriver -----------------------------------------------------------
    def run_forever(self):
        """Derive in this thread until :meth:`close` (from another thread) or an interrupt."""
        self._run()

    def _run(self):
        while not self._stop.is_set():
            full = False
            try:
                result = self.derive_pass()
                busy = result is not None and result["records"] > result["kept"]
                full = result is not None and (self._full or self._resume)
                self.last_error = None
            except (BackendUnavailable, BackendError, TableNotFound) as exc:
                self.failures += 1
                self.last_error = str(exc)
                busy = False
            except Exception as exc:  # never let the deriver die silently: log, back off, go on
                self.failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("derivation pass failed")
                busy = False
            if busy and not full:
                # under a steady stream, a pass per few saves would cost its nine calls for a
                # handful of crashes: the saves of the next moment join one pass
                self._stop.wait(COALESCE_SECONDS)
            elif not busy:
                if self._wake.wait(IDLE_SECONDS):
                    self._stop.wait(COALESCE_SECONDS)  # let the saves landing about now join the pass
                self._wake.clear()

    def close(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._release()
