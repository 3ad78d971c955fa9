"""Live counters: the ``metrics`` table and ``crash_report_signatures``.

Everything here builds lists of :class:`~socorro_store.backends.Increment`; the crash store sends
the increments of one crash (or one batch) in a single ``backend.increment_many`` call.  Counters
are derived views: increments are never retried, and batch jobs recompute exact values for closed
intervals from the crash rows (DESIGN.md "Consistency").

Layout (cells are 8-byte big-endian signed integers, :func:`keys.encode_counter`):

``metrics`` rows ``yyyy``, ``yyyy-mm``, ``yyyy-mm-dd``, ``yyyy-mm-ddThh``, ``yyyy-mm-ddThh:mm``
(UTC, of the crash's *submitted* time; every counter below goes to all five levels)::

    counters:submitted_crash_reports                 +1 per crash saved
    counters:submitted_crash_reports_legacy_throttle_N  N = legacy_processing (0 ACCEPT,
                                                     1 DEFER, 2 DISCARD); absent -> not counted
    counters:submitted_oop_<ProcessType>_crash_reports  ProcessType present and not "default"
    counters:submitted_crash_report_hang_pairs       +1 once per pair, when its second side is saved
    counters:crash_report_processing_errors          processed crash with ``success`` False or
                                                     no signature (None / missing)
    counters:unique_crash_signatures                 +1 the first time a signature is seen in the
                                                     interval (hour, day, month, year: the levels
                                                     that have a signature column; not minute)

The daily row also holds ``counters:<product>_active_installations`` (a put, not an increment:
:func:`active_installations_put`).

``metrics`` row ``crash_report_queues`` (the wiki's ten counters; "in queue" = inserts - deletes)::

    inserts_unprocessed / deletes_unprocessed                 standard queue pointer added (every
                                                              crash) / removed (crash processed)
    inserts_unprocessed_legacy / deletes_unprocessed_legacy   legacy queue (legacy_processing 0)
    inserts_unprocessed_priority / deletes_unprocessed_priority   priority (reprocessing) requests
                                                              queued / served
    inserts_processed_legacy / deletes_processed_legacy       processed crashes of the legacy queue
                                                              handed to downstream feeders / taken
                                                              by them (Socorro's db-feeder queue)
    inserts_processed_priority / deletes_processed_priority   the same for priority crashes

This library has no downstream feeder: ``deletes_processed_*`` move only through
:func:`processed_consumed_increments`, called by whatever consumes processed crashes.

``crash_report_signatures`` row = signature name (``##empty##`` / ``##null##``), columns
``counters:hourly_yyyy-mm-ddThh``, ``daily_yyyy-mm-dd``, ``monthly_yyyy-mm``, ``yearly_yyyy``:
crashes of that signature submitted in the interval.

Dimensioned counters (:mod:`socorro_store.schema.dimension_keys`): every ``submitted_crash_reports``
increment also goes to ``…|p=<product>`` and ``…|pv=<product>:<version>`` (the raw crash's
``ProductName``/``Version``), and every signature increment of a crash's first processing to the
``…|p=``, ``|pv=``, ``|os=``, ``|po=`` and ``|pvo=`` columns of the same intervals (the processed
crash's ``product``/``version``/``os_name``; the next ``rollup`` applies the raw crash's value where
the processed crash has none, and moves a reprocessed crash's dimensioned counts).

Cardinality (:class:`Dimensions`): a value gets its own columns only once admitted in a registry
row of ``crash_report_signatures_seen`` (``~dimensions/product``, ``~dimensions/os``,
``~dimensions/version/<product>``), which holds at most :data:`DIMENSION_CAPS` values (100
products, 200 versions per product, 50 OS names) however many processes admit at once: a value
takes one of the row's slots with a check-and-put (:mod:`~socorro_store.crashstore.admission`).
``rollup`` rewrites the rows by volume, leaving a tenth to values arriving between runs; a value
with no room counts under ``##other##``, a crash with the field missing under ``##unknown##``.
So 10,000 distinct versions of one product make at most 201 version columns per interval.

First-seen detection (unique_crash_signatures): :func:`first_seen` keeps a marker per (interval,
signature) in ``crash_report_signatures_seen`` and appends to the missing ones, one append per
interval row; the one append that gets back only its own byte counts the pair.  Every (signature,
interval) is counted once live, whatever the number of processors.
"""

import collections
import logging
import threading
from datetime import datetime, timedelta, timezone

from ..backends import Increment
from ..checks import is_int
from ..errors import BackendError, BackendUnavailable, InvalidArgument, TableNotFound
from ..schema.keys import (
    FAMILY_COUNTERS,
    METRICS,
    QUEUE_ROW,
    SIGNATURES,
    SIGNATURES_SEEN,
    counter_column,
    decode_counter,
    encode_counter,
    first_seen_cells,
    metrics_row,
    metrics_rows,
    parse_timestamp,
    signature_counter_columns,
    signature_row,
    validate_process_type,
)
from ..schema import dimension_keys as DK
from ..schema import ranking_keys as RK
from ..schema.crash_facts import stored_dimensions, stored_process_type
from ..schema.stored import validate_metrics_row_name
from .counter_sender import GATHER_S, CounterSender
from .dimensions import DIMENSION_CAPS, Dimensions  # noqa: F401 - the cap, re-exported for counter users

log = logging.getLogger(__name__)
#: the longest a closing store waits for its own saves to be derived
CLOSE_SETTLE_SECONDS = 10.0
QUEUE_COUNTERS = (
    "inserts_unprocessed", "deletes_unprocessed",
    "inserts_unprocessed_priority", "deletes_unprocessed_priority",
    "inserts_unprocessed_legacy", "deletes_unprocessed_legacy",
    "inserts_processed_priority", "deletes_processed_priority",
    "inserts_processed_legacy", "deletes_processed_legacy",
)
#: queue name -> the suffix of its two counters (``inserts_`` + suffix, ``deletes_`` + suffix)
QUEUE_SUFFIXES = {"standard": "unprocessed", "legacy": "unprocessed_legacy", "priority": "unprocessed_priority"}
SUBMITTED = "submitted_crash_reports"
HANG_PAIRS = "submitted_crash_report_hang_pairs"
PROCESSING_ERRORS = "crash_report_processing_errors"
UNIQUE_SIGNATURES = "unique_crash_signatures"
FIRST_MARK = b"\x01"  # what one processor appends to a first-seen marker


def throttle_counter(legacy_processing):
    return f"submitted_crash_reports_legacy_throttle_{int(legacy_processing)}"


def oop_counter(process_type):
    return f"submitted_oop_{validate_process_type(process_type)}_crash_reports"


def metric_increments(moment, names, amount=1, levels=None):
    """Increments of each counter in ``names`` at every level (or ``levels``) of ``moment``."""
    rows = metrics_rows(moment)
    out = []
    for level, row in rows.items():
        if levels is not None and level not in levels:
            continue
        for name in names:
            out.append(Increment(METRICS, row, counter_column(name), amount))
    return out


def queue_increments(**deltas):
    """Increments of the ``crash_report_queues`` row: ``queue_increments(inserts_unprocessed=1)``."""
    out = []
    for name, amount in deltas.items():
        if name not in QUEUE_COUNTERS:
            raise InvalidArgument(f"unknown queue counter {name!r}")
        if amount:
            out.append(Increment(METRICS, QUEUE_ROW, counter_column(name), amount))
    return out


def crash_dimensions(cells, processed=True):
    """``{"product", "version", "os"}`` of a crash's flags cells, normalized (not yet capped);
    processed, also its ``process_type`` (``flags:process_type``, ranked only: capped as it is
    normalized, ``default`` or none is ``parent``)."""
    out = {k: DK.normalize(v) for k, v in stored_dimensions(cells, processed).items()}
    if processed:
        out["process_type"] = DK.normalize_process_type(stored_process_type(cells))
    return out


def submit_increments(submitted, legacy_processing, process_type, cells=None, dims=None, queues=True):
    """The metrics and queue counters of one saved raw crash.

    ``cells`` (the crash row's puts): with them, ``submitted_crash_reports`` is also counted per
    product and product+version (``flags:product``/``flags:version``); ``dims`` gives those
    values instead (as counted: the deriver's capped facts).  ``queues=False``: no queue counter."""
    names = [SUBMITTED]
    if legacy_processing is not None:
        names.append(throttle_counter(legacy_processing))
    if process_type and process_type != "default":
        names.append(oop_counter(process_type))
    out = metric_increments(submitted, names)
    if cells is not None and dims is None:
        dims = crash_dimensions(cells, processed=False)
    if dims is not None:
        plain = counter_column(SUBMITTED)
        out += [Increment(METRICS, row, DK.with_key(plain, key), 1)
                for row in metrics_rows(submitted).values() for key in DK.keys_of(dims, DK.METRICS_DIMENSIONS)]
    if queues:
        out += queue_increments(inserts_unprocessed=1, inserts_unprocessed_legacy=1 if legacy_processing == 0 else 0)
    return out


def hang_pair_increments(submitted):
    return metric_increments(submitted, [HANG_PAIRS])


def signature_increments(signature, submitted, amount=1, cells=None, dims=None):
    """The four interval counters of ``signature`` for a crash submitted at ``submitted``, and
    its count in the day's ranking (:mod:`~socorro_store.schema.ranking_keys`); with ``cells``
    (the processed crash's puts) also the dimensioned ones of each interval, and its product's
    ranking; ``dims`` gives the dimension values instead (as counted: capped facts)."""
    row = signature_row(signature)
    columns = list(signature_counter_columns(submitted).values())
    day = parse_timestamp(submitted).date()
    rankings = [RK.rank_row(day)]
    if cells is not None and dims is None:
        dims = crash_dimensions(cells)
    if dims is not None:
        keys = DK.keys_of(dims, DK.SIGNATURE_DIMENSIONS)
        columns += [DK.with_key(column, key) for column in columns for key in keys]
        rankings += [RK.rank_row(day, key) for key in DK.keys_of(dims, RK.RANKED_KINDS)]
    return ([Increment(SIGNATURES, row, column, amount) for column in columns]
            + [Increment(SIGNATURES_SEEN, ranking, RK.rank_column(row), amount) for ranking in rankings])


def processed_consumed_increments(queue, count):
    """For a downstream feeder: ``count`` processed crashes of ``queue`` (legacy|priority) taken."""
    if queue not in ("legacy", "priority"):
        raise InvalidArgument(f"processed queues are legacy and priority, not {queue!r}")
    return queue_increments(**{f"deletes_processed_{queue}": count})


def coalesce(increments):
    """Sum increments of the same cell (order of first appearance kept); drop zero sums."""
    totals = {}
    for inc in increments:
        key = (inc.table, inc.row, inc.column)
        totals[key] = totals.get(key, 0) + inc.amount
    return [Increment(t, r, c, a) for (t, r, c), a in totals.items() if a]


#: how long before the end of its day a ranking change counts as one of a closed day: the
#: clocks of the processes saving and of the rollup may differ by this much
SLACK_MARGIN = timedelta(minutes=10)


def slack_increments(increments, now=None, in_row=False):
    """The slack-row increments (:func:`~socorro_store.schema.ranking_keys.slack_row`) of the
    ranking changes in ``increments`` (coalesced) that hit a closed day: a day ``rollup`` may
    have written head and top rows of, whose bounds then widen by the change.  ``in_row`` (the
    deriver): also each changed ranking row's own slack cells, whatever its day (its open head's
    base, :func:`~socorro_store.schema.ranking_keys.open_head_cell`)."""
    now = now or datetime.now(timezone.utc)
    closed_before = (now + SLACK_MARGIN).date()
    totals = {}
    for inc in increments:
        if inc.table != SIGNATURES_SEEN or not inc.row.startswith(RK.RANK_PREFIX) or not inc.amount:
            continue
        try:
            day, key = RK.parse_rank_row(inc.row)
        except InvalidArgument:
            continue  # not a day's ranking row
        rows = ([RK.slack_row(day, key)] if day < closed_before else []) + ([inc.row] if in_row else [])
        for row in rows:
            for column, amount in RK.slack_amounts(inc.amount).items():
                totals[(row, column)] = totals.get((row, column), 0) + amount
    return [Increment(SIGNATURES_SEEN, row, column, n) for (row, column), n in totals.items() if n]


def first_seen(backend, pairs, known=None):
    """Detect (signature, interval) pairs seen for the first time; return the metrics increments.

    ``pairs`` is an iterable of ``(signature, submitted time)``.  The markers of the batch
    (:func:`keys.first_seen_cells`: one row per interval, one column per signature) are read in
    one call; each interval row with missing markers then gets one byte appended to each of
    them, in one ``append_many`` (one append per interval row).  An append is atomic on its row,
    so exactly one processor gets back the single byte it appended: only that one counts the
    interval in ``unique_crash_signatures``.  A batch of crashes from the last few minutes costs
    two calls (a read and the appends of ~5 rows), whatever its number of new signatures.
    Exceptions, which the next ``rollup`` corrects: a marker deleted by ``expire`` and then seen
    again is counted again, and a reprocessed crash that moves to a new signature counts it
    even if the old one then has no crash left in the interval.

    ``known`` (a :class:`SeenMarkers`): markers this process already saw stored.  A marker is
    never removed while its interval is live, so those need no read: a batch whose markers are
    all known costs no call at all.
    """
    wanted = {}  # (row, column) -> the metrics row counting it
    for signature, submitted in pairs:
        rows = metrics_rows(submitted)
        for level, cell in first_seen_cells(signature, submitted).items():
            wanted[cell] = rows[level]
    if known is not None:
        wanted = {cell: row for cell, row in wanted.items() if cell not in known}
    if not wanted:
        return []
    rows = sorted({row for row, _column in wanted})
    columns = sorted({column for _row, column in wanted})
    found = backend.get_rows(SIGNATURES_SEEN, rows, columns=columns)
    missing = {}
    for row, column in wanted:
        if column not in found.get(row, {}):
            missing.setdefault(row, {})[column] = FIRST_MARK
    results = backend.append_many(SIGNATURES_SEEN, list(missing.items())) if missing else []
    if known is not None:
        known.add_all(wanted)  # stored now: found, or appended by us or by a racing processor
    return [Increment(METRICS, wanted[(row, column)], counter_column(UNIQUE_SIGNATURES), 1)
            for (row, marks), result in zip(missing.items(), results)
            for column in marks if result.get(column) == FIRST_MARK]


class SeenMarkers:
    """The first-seen markers (``(interval row, column)``) this process knows are stored: the
    latest ``capacity`` of them, so a processor counting a popular signature again in the same
    hour reads nothing.  Thread-safe."""

    def __init__(self, capacity=65536):
        self.capacity = capacity
        self._cells = collections.OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, cell):
        with self._lock:
            if cell in self._cells:
                self._cells.move_to_end(cell)
                return True
            return False

    def add_all(self, cells):
        with self._lock:
            for cell in cells:
                self._cells[cell] = True
                self._cells.move_to_end(cell)
            while len(self._cells) > self.capacity:
                self._cells.popitem(last=False)


def active_installations_put(product, day, count):
    """``(row, {column: value})`` for the daily ``<product>_active_installations`` metric."""
    if not is_int(count) or count < 0:
        raise InvalidArgument(f"active installations must be a non-negative int: {count!r}")
    if not isinstance(product, str) or not product:
        raise InvalidArgument(f"product must be a non-empty string: {product!r}")
    column = counter_column(f"{product.lower()}_active_installations")
    return metrics_row(day, "day"), {column: encode_counter(count)}


def read_counters(backend, table, row):
    """``{counter name: int}`` of one row's counters family (non-counter cells are skipped)."""
    cells = backend.get_row(table, row, columns=[FAMILY_COUNTERS])
    out = {}
    for column, value in cells.items():
        if len(value) == 8:
            out[column.split(b":", 1)[1].decode("utf-8", "surrogatepass")] = decode_counter(value)
    return out


def get_metrics(backend, row, product=None, version=None, settle=None):
    """``{counter: int}`` of any metrics row: ours (time levels, crash_report_queues) or Socorro's
    (``crash_report_queue``); the name is checked to be a sane row name, not a format.

    The plain counters; with ``product`` (and ``version``) those counted for that product (and
    version) instead (``submitted_crash_reports``), named without their dimension key.  A value
    over the cardinality cap is read as ``##other##``'s counts only when asked for by that name.
    ``settle``: called once the arguments are valid, before the read (the store's own writes).
    """
    row = validate_metrics_row_name(row)
    key = DK.filter_key(product, version) if product is not None or version is not None else None
    if settle is not None:
        settle()
    suffix = None if key is None else "|" + key.decode("ascii")
    out = {}
    for name, n in read_counters(backend, METRICS, row).items():
        base, sep, rest = name.partition("|")
        if suffix is None and not sep:
            out[name] = n
        elif suffix is not None and sep and "|" + rest == suffix:
            out[base] = n
    return out


def get_signature_counters(backend, signature, product=None, version=None, os=None, read=None, settle=None):
    """``{column name: int}`` of a signature's plain counters, or with a filter (product,
    version, os) those of that dimension, named without their key (``daily_2016-09-18``).
    ``read``: the row's :func:`read_counters`, when the caller already read it; ``settle``:
    called once the arguments are valid, before the read."""
    key = DK.filter_key(product, version, os)
    row = signature_row(signature)
    if settle is not None:
        settle()
    suffix = None if key is None else key.decode("ascii")
    out = {}
    if read is None:
        read = read_counters(backend, SIGNATURES, row)
    for name, n in read.items():
        base, sep, rest = name.partition("|")
        if (suffix is None and not sep) or (suffix is not None and sep and rest == suffix):
            out[base] = n
    return out


def queue_sizes(backend):
    """Live queue lengths from ``crash_report_queues`` (inserts - deletes)."""
    counts = read_counters(backend, METRICS, QUEUE_ROW)

    def size(suffix):
        return counts.get("inserts_" + suffix, 0) - counts.get("deletes_" + suffix, 0)

    return {"standard": size("unprocessed"), "legacy": size("unprocessed_legacy"),
            "priority": size("unprocessed_priority"), "processed_legacy": size("processed_legacy"),
            "processed_priority": size("processed_priority")}


class CounterBuffer:
    """Coalesces counter increments in memory and flushes them as one ``increment_many`` call.

    ``open_store(url, counter_flush_ms=1000)`` puts one between the store and its backend: the
    increments of every crash saved within ``flush_ms`` are summed per cell and sent in one call
    by a background thread, and once more on :meth:`close`.  Anything may call :meth:`flush`.

    Loss window: increments not yet flushed when the process dies (at most ``flush_ms`` of them),
    and a flush whose call fails ambiguously (never replayed, since increments are not
    idempotent).  Crash rows and pointers are never buffered, so the next ``rollup`` recomputes
    every lost count from them.  ``lost`` counts the increments of failed flushes, and each
    failed flush is reported to ``on_failure(cells, exc)`` (default: a warning in the log): the
    background thread's flushes have no caller to raise to.
    """

    def __init__(self, backend, flush_ms, on_failure=None):
        if not is_int(flush_ms) or flush_ms < 1:
            raise InvalidArgument("counter_flush_ms must be a positive int")
        self.backend = backend
        self.flush_s = flush_ms / 1000
        self.on_failure = on_failure or _log_lost_flush
        self.lost = 0
        self._pending = {}
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="counter-flush", daemon=True)
        self._thread.start()

    def increment_many(self, increments):
        with self._lock:
            for inc in increments:
                key = (inc.table, inc.row, inc.column)
                self._pending[key] = self._pending.get(key, 0) + inc.amount

    def flush(self):
        """Send what is pending in one call; returns the number of cells sent."""
        with self._flush_lock:
            with self._lock:
                pending, self._pending = self._pending, {}
            batch = [Increment(t, r, c, a) for (t, r, c), a in pending.items() if a]
            if not batch:
                return 0
            try:
                self.backend.increment_many(batch)
            except Exception as exc:
                self.lost += len(batch)
                self.on_failure(len(batch), exc)
                raise
            return len(batch)

    def _run(self):
        while not self._stop.wait(self.flush_s):
            try:
                self.flush()
            except Exception:  # noqa: BLE001 - the flusher must outlive any failed flush
                pass  # reported by flush (``on_failure``); the next rollup repairs the counters

    def close(self):
        """Stop the flusher and flush what is left (write, then acknowledge)."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join()
        self.flush()


def _log_lost_flush(cells, exc):
    log.warning("a counter flush of %d cells failed (the next rollup repairs them): %s", cells, exc)


class LiveCounters:
    """Where a store sends its live counter increments, and its tally of what could not be sent.

    One per :class:`~socorro_store.crashstore.store.CrashStore`.  :meth:`send` is called once the
    crash rows and pointers of a save are stored.  ``background=True`` hands the increments to a
    :class:`~.counter_sender.CounterSender` (coalesced, sent by a thread: the save does not wait
    for them; :meth:`settle` waits); else they are sent in the caller's thread, through a
    :class:`CounterBuffer` when ``flush_ms`` is given.  A backend failure here is logged and
    tallied in :attr:`failures` (``"increments"``: cells not counted, a failed buffer flush's
    too, ``"detections"``: failed
    hang-pair or first-seen checks), never raised: a caller retrying the whole save would count
    the crash twice (increments are never replayed).  ``"uncertain"``: increments of a save that
    failed where its retry cannot tell whether they are due (a raw crash row or a
    first-processing check-and-put that may have been applied), so the retry sends none.  The
    next ``rollup`` recomputes every count tallied here.
    """

    def __init__(self, backend, flush_ms=None, background=False, derive_background=False):
        if flush_ms is not None and background:
            raise InvalidArgument("counter_flush_ms and background counters exclude each other")
        self._deriver, self._derive_background = None, derive_background
        self._deriver_lock = threading.Lock()
        self.backend = backend
        self.buffer = CounterBuffer(backend, flush_ms, self._lost_flush) if flush_ms is not None else None
        self.sender = CounterSender(self._send_jobs, gather_s=GATHER_S) if background else None
        self.failures = collections.Counter()
        self._failures_lock = threading.Lock()
        self.seen_markers = SeenMarkers()
        self.dimensions = Dimensions()

    def deriver(self):
        """The store's :class:`~.counter_deriver.CounterDeriver`, started on first use, when the
        store is cut over to derived counters; else None (its saves increment live)."""
        if self._deriver is None:
            from . import counter_deriver, cut_over  # the deriver counts with this module's functions

            if not cut_over.enabled(self.backend):
                return None
            with self._deriver_lock:
                if self._deriver is None:
                    self._deriver = counter_deriver.admitting_deriver(self.backend, self.dimensions,
                                                                      background=self._derive_background)
        return self._deriver

    def changed(self, stamps):
        """Saves of this store wrote change records with ``stamps`` for the deriver (and wait
        for it when it lags beyond its limit: :meth:`~.counter_deriver.CounterDeriver.press`)."""
        if stamps:
            deriver = self.deriver()
            deriver.noted(max(stamps))
            deriver.press()

    def send(self, increments, detect=None):
        """Send ``increments`` plus those ``detect()`` returns, in one call (or hand them over)."""
        if self.sender is not None:
            self.sender.submit(list(increments), detect)
        else:
            self._send_jobs([(increments, detect)])

    def _send_jobs(self, jobs):
        """Run the jobs' detections, then send every increment, summed per cell, in one call."""
        increments = []
        for job_increments, detect in jobs:
            increments += job_increments
            if detect is not None:
                try:  # a failed detection (hang pairs, first-seen) must not cost the plain counters
                    increments += detect()
                except Exception as exc:  # noqa: BLE001 - any failure: the crash is stored
                    self._tally("detections", 1)
                    log.warning("pair / first-seen detection failed (the next rollup repairs it): %s", exc)
        if not increments:
            return
        # Any error here, not only an outage (a table gone, a cell that is no counter, a refused
        # argument), is tallied and never raised: the crashes are stored, and a caller retrying
        # its save would count it twice.  The error may have applied part of the call, so
        # nothing is replayed; the next rollup recomputes the counts.
        try:
            increments = coalesce(self.dimensions.rewrite(self.backend, increments))
            (self.buffer or self.backend).increment_many(increments + slack_increments(increments))
        except Exception as exc:  # noqa: BLE001
            self._tally("increments", len(increments))
            log.warning("counters not updated (the next rollup repairs them): %s: %s", type(exc).__name__, exc)

    def _lost_flush(self, cells, exc):
        """The buffer's report of a failed flush: tallied as ``"increments"`` like a failed send."""
        self._tally("increments", cells)
        _log_lost_flush(cells, exc)

    def settle(self, derived=True):
        """Wait until the increments handed to the background sender so far are sent (a no-op
        without one), and with ``derived`` until this store's saves are derived: what this
        store wrote, its counter reads then see.  ``derived=False``: the live counters only
        (the queue counters, which saves still increment)."""
        if self.sender is not None:
            self.sender.settle()
        if derived and self._deriver is not None:
            self._deriver.settle_own()

    def tally(self, kind, n):
        """Record ``n`` increments of ``kind`` lost (logged once per call)."""
        self._tally(kind, n)
        log.warning("%d counter increments may be lost (%s); the next rollup repairs them", n, kind)

    def _tally(self, kind, n):
        with self._failures_lock:
            self.failures[kind] += n

    def flush(self):
        """Send pending increments now; the number of cells the buffer sent (0 without one)."""
        self.settle()
        return self.buffer.flush() if self.buffer is not None else 0

    def close(self):
        if self.sender is not None:
            self.sender.close()
        if self._deriver is not None and self._derive_background:
            # a deriving process's saves are derived before it goes, as a live store's increments
            # are sent: a command that saved leaves the counters saying so (bounded: a lagging
            # store's records are left to the other derivers).  An inline one leaves them to its
            # worker (``socorro-store derive run``) or to ``settle()``.
            try:
                self._deriver.settle_own(CLOSE_SETTLE_SECONDS)
            except (BackendError, BackendUnavailable, TableNotFound) as exc:
                log.warning("this process's saves not derived before closing (another deriver will): %s", exc)
            self._deriver.close()
        if self.buffer is not None:
            self.buffer.close()
