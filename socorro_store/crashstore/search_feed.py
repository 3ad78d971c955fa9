"""Feeding the search index from the change records, so that no save is ever lost to it.

A processed save writes a change record (:mod:`~socorro_store.schema.change_keys`) beside its
signature pointer, before its crash row, and the crash row keeps the record's stamp in
``flags:changed``, written with the row itself.  A deletion tells the engine itself, and writes
a record only when the engine cannot be reached.  The feed reads the records, then the crash
rows they name, and brings the search engine to what each crash row holds now:

* a crash row holding the record's stamp, or a later one: the save has landed, and the crash
  is indexed from the row (the truth, not from anything the save remembered);
* a crash row gone: the crash is removed from the index (a deletion also removes its crashes
  itself, and its records: see :meth:`~.search_access.StoreSearch.crashes_deleted`; a pass reads
  the rows of what it indexed once more, so a crash deleted while the pass ran is not left
  indexed);
* a crash row holding an earlier stamp: the save is still in flight, and the record is kept
  for the next pass; a record older than :data:`PENDING_SECONDS` belongs to a save that failed
  after writing it, and goes (the row says what the crash is).

Only then are the records consumed.  A record is consumed only by a pass that read its crash
row after the record was written, so the index ends at every crash row's last state: an engine
that was down or slow catches up from the records, and the saves never wait for it.

One process feeds at a time, under a lease (``~feed/lease``, renewed every pass): two feeders
could index one crash's states out of order.  Any process may take the lease when it is free
or expired, so a killed feeder's work is taken over within :data:`LEASE_SECONDS`.
"""

import json
import logging
import threading
import time

from ..backends import RowMutation
from ..errors import BackendError, BackendUnavailable, InvalidArgument, SearchUnavailable, TableNotFound
from ..schema import change_keys as C
from ..schema import keys as K
from ..schema.stored import stored_time
from ..search.fields import document_of
from . import change_records
from .row_lease import RowLease

log = logging.getLogger(__name__)

LEASE_SECONDS = 30.0
PENDING_SECONDS = 120.0
#: records read per pass (their crash rows are read in the same number of rows: the processed JSON)
BATCH = 200
#: how often an idle background feeder looks for records
IDLE_SECONDS = 0.5
#: how long a feeder woken by a save waits for more saves before its pass
COALESCE_SECONDS = 0.2
#: how often a feeder reads the dead letters again (another process's reindex or repair may
#: have added some): a crash indexed meanwhile keeps its dead letter until a reindex or repair
DEAD_RECHECK_SECONDS = 60.0
#: what the feed and reindex read of a crash row
ROW_COLUMNS = [K.COL_OOID, K.COL_SUBMITTED, K.COL_CHANGED, K.COL_PROCESSED_JSON]


def crash_document(crash_id, cells):
    """The search document of a crash row's cells, or None when it holds no processed crash."""
    raw = cells.get(K.COL_PROCESSED_JSON)
    if not raw:
        return None
    try:
        processed = json.loads(raw)
    except (ValueError, RecursionError):
        processed = None
    if not isinstance(processed, dict):
        return None
    doc = document_of(processed)
    doc["uuid"] = crash_id  # the row's crash, whatever the document says
    if "date" not in doc and K.COL_SUBMITTED in cells:
        try:
            doc["date"] = stored_time(cells[K.COL_SUBMITTED]).isoformat()
        except InvalidArgument:
            pass
    return doc


def index_documents(backend, engine, documents):
    """Index ``documents``; return ``(indexed, dead-lettered crash ids)``.  A batch the engine
    refuses for another reason than being unreachable is indexed one document at a time, and a
    document it refuses alone is dead-lettered (:func:`dead_letter`): one crash never stops the
    feed, and is never retried for ever."""
    try:
        engine.index(documents)
        return documents, []
    except (SearchUnavailable, BackendUnavailable):
        raise
    except Exception:  # noqa: BLE001 - the engine refused some document: find which
        pass
    indexed, dead = [], []
    for document in documents:
        try:
            engine.index([document])
            indexed.append(document)
        except (SearchUnavailable, BackendUnavailable):
            raise
        except Exception as exc:  # noqa: BLE001 - recorded and visible
            log.warning("search feed: crash %s dead-lettered: %s", document.get("uuid"), exc)
            dead_letter(backend, document["uuid"], f"{type(exc).__name__}: {exc}")
            dead.append(document["uuid"])
    return indexed, dead


def dead_letter(backend, crash_id, problem):
    """Record that the search engine refused a crash's document (``~feed/dead/<crash id>``,
    ``change:ooid`` = the problem): its change record is consumed, and ``search status`` lists
    it; ``search reindex`` tries it again."""
    backend.mutate_rows(K.CHANGES, [RowMutation(C.FEED_DEAD_PREFIX + crash_id.encode("ascii"),
                                                {K.COL_CHANGE_ID: problem.encode("utf-8", "replace")[:1000]})])


def dead_lettered(backend, limit=100):
    """``[(crash id, problem)]`` of up to ``limit`` dead-lettered crashes."""
    return [(row[len(C.FEED_DEAD_PREFIX):].decode("ascii", "replace"), cells[K.COL_CHANGE_ID].decode("utf-8", "replace"))
            for row, cells in backend.scan(K.CHANGES, prefix=C.FEED_DEAD_PREFIX, columns=[K.COL_CHANGE_ID], limit=limit)]


def revive_dead_letters(backend, crash_ids):
    """Take the dead letters of ``crash_ids`` (indexed at last, by a reindex or a repair) off
    ``search status``'s list: one scan of the dead letters, one mutate of those found."""
    revived = [RowMutation(C.FEED_DEAD_PREFIX + cid.encode("ascii"), delete_row=True)
               for cid, _problem in dead_lettered(backend, limit=None) if cid in crash_ids]
    if revived:
        backend.mutate_rows(K.CHANGES, revived)


def pending_changes(backend, limit=10_000):
    """``(records waiting, age in seconds of the oldest, or None)``: how far the feed lags, from
    one bounded scan of the change records (up to ``limit`` counted)."""
    return change_records.records_waiting(backend, K.COL_CHANGE_ID, limit)


class SearchFeed:
    """The feed of one store into one search engine (see the module docstring).

    ``background``: run a feeder thread (it feeds whenever it holds the lease).  ``catch_up()``
    feeds inline until no record is left, which is what ``settle()`` does.
    """

    def __init__(self, backend, engine, background=True, holder=None, batch=BATCH,
                 lease_seconds=LEASE_SECONDS, pending_seconds=PENDING_SECONDS):
        self.backend, self.engine = backend, engine
        self.lease = RowLease(backend, K.CHANGES, C.FEED_LEASE_ROW, K.COL_CHANGE_LEASE, holder, lease_seconds)
        self.batch, self.pending_ns = batch, int(pending_seconds * 1e9)
        self._resume = b""
        self._lock = threading.Lock()  # one pass at a time in this process
        self._stop = threading.Event()
        self._wake = threading.Event()  # a save landed: feed now, not at the next idle tick
        self.fed = self.removed = 0
        self._dead, self._dead_read_at = None, 0.0  # the dead letters known (see _revived)
        self.passes = 0  # passes that found records (each: a scan, two reads, an index, a delete)
        self.failures = 0
        self.last_error = None
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._run, name="search-feed", daemon=True)
            self._thread.start()

    # -- the lease ------------------------------------------------------------------------
    @property
    def holds_lease(self):
        """Whether this feeder holds the feed lease now."""
        return self.lease.held

    # -- one pass -------------------------------------------------------------------------
    def _read_records(self):
        records, self._resume, _full = change_records.read_records(self.backend, K.COL_CHANGE_ID, self._resume,
                                                                   self.batch)
        return {cid: [(key, stamp) for key, stamp, _value in recs] for cid, recs in records.items()}

    def feed_pass(self):
        """One pass over up to ``batch`` records (see the module docstring); returns
        ``{"records": n, "indexed": n, "removed": n, "kept": n}``, or None when another process
        holds the lease.  Engine failures raise :class:`SearchUnavailable` with nothing consumed."""
        with self._lock:
            if not self.lease.hold():
                return None
            records = self._read_records()
            out = {"records": sum(len(r) for r in records.values()), "indexed": 0, "removed": 0, "kept": 0,
                   "dead_lettered": 0}
            if not records:
                return out
            self.passes += 1
            rows = {cid: K.crash_row_key(cid) for cid in records}
            cells_of = self.backend.get_rows(K.CRASH_REPORTS, list(rows.values()), columns=ROW_COLUMNS)
            now = time.time_ns()
            documents, removed, consumed = [], [], []
            for crash_id, recs in records.items():
                cells = cells_of.get(rows[crash_id], {})
                if K.COL_OOID not in cells:
                    removed.append(crash_id)
                    consumed += [key for key, _stamp in recs]
                    continue
                landed = cells.get(K.COL_CHANGED, b"")
                ready = [key for key, stamp in recs if stamp <= landed or now - C.stamp_time_ns(stamp) > self.pending_ns]
                out["kept"] += len(recs) - len(ready)
                if ready:
                    document = crash_document(crash_id, cells)
                    if document is None:
                        removed.append(crash_id)
                    else:
                        documents.append(document)
                    consumed += ready
            revived = []
            if documents:
                documents, dead = index_documents(self.backend, self.engine, documents)
                out["dead_lettered"] = len(dead)
                revived = self._revived(documents, dead)
                removed += self._deleted_meanwhile(documents)
            if removed:
                self.engine.delete(removed)
            if consumed:
                # its own cell only: the record may be the counter deriver's too (change:derive)
                self.backend.mutate_rows(K.CHANGES, [RowMutation(key, deletes=[K.COL_CHANGE_ID]) for key in consumed] +
                                         [RowMutation(C.FEED_DEAD_PREFIX + cid.encode("ascii"), delete_row=True)
                                          for cid in revived])
            out["indexed"], out["removed"] = len(documents), len(removed)
            self.fed += len(documents)
            self.removed += len(removed)
            return out

    def _revived(self, indexed, dead):
        """The crashes of ``indexed`` that were dead letters (a reprocessing the engine takes):
        their dead letters go with the pass's consumed records, in the same call.  The dead
        letters are read once per :data:`DEAD_RECHECK_SECONDS`, not per pass (there are none,
        mostly); ``dead``, this pass's own, are added."""
        now = time.monotonic()
        if self._dead is None or now - self._dead_read_at > DEAD_RECHECK_SECONDS:
            self._dead = {cid for cid, _problem in dead_lettered(self.backend, limit=None)}
            self._dead_read_at = now
        self._dead.update(dead)
        found = sorted({doc["uuid"] for doc in indexed} & self._dead)
        self._dead.difference_update(found)
        return found

    def _deleted_meanwhile(self, documents):
        """The crashes of ``documents`` whose rows were deleted after this pass read them: a
        deletion removes its crashes from the index at once, and this pass may have indexed
        one after that (read before, written after), so it looks again and removes them."""
        keys = {K.crash_row_key(doc["uuid"]): doc["uuid"] for doc in documents}
        there = self.backend.get_rows(K.CRASH_REPORTS, list(keys), columns=[K.COL_OOID])
        return [cid for key, cid in keys.items() if K.COL_OOID not in there.get(key, {})]

    def catch_up(self, timeout=30.0):
        """Feed until no record is left that is ready (returns True), or ``timeout`` seconds
        pass (False).  While another process holds the lease, wait for it to consume them; take
        the lease over if it expires.  Never waits forever."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.feed_pass()
            if result is not None and result["records"] == 0:
                return True
            if result is not None and result["records"] == result["kept"] and not self._resume:
                return True  # only saves still in flight are left: they are not ours to wait for
            if time.monotonic() > deadline:
                return False
            if result is None:
                time.sleep(0.05)

    def pending(self, limit=10_000):
        """See :func:`pending_changes`."""
        return pending_changes(self.backend, limit)

    # -- the background feeder ------------------------------------------------------------
    def _run(self):
        while not self._stop.is_set():
            try:
                result = self.feed_pass()
                busy = result is not None and result["records"] > result["kept"]
                self.last_error = None
            except (SearchUnavailable, BackendUnavailable, BackendError, TableNotFound) as exc:
                self.failures += 1
                self.last_error = str(exc)
                busy = False
            except Exception as exc:  # never let the feeder die silently: log, back off, go on
                self.failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("search feed pass failed")
                busy = False
            if not busy:
                if self._wake.wait(IDLE_SECONDS):
                    # let the saves landing about now join this pass: a pass per save would cost
                    # its five calls per crash on a remote backend
                    self._stop.wait(COALESCE_SECONDS)
                self._wake.clear()

    def poke(self):
        """A save of this process landed: the background feeder looks for records at once."""
        self._wake.set()

    def close(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            self.lease.release()
