"""CrashStore: Socorro's CrashStorage API on one backend URL.

Composes :mod:`crashes` (crash rows and indexes), :mod:`queue` (claims) and :mod:`counters`
(metrics and signature counters).  Methods carry Socorro's names.  It speaks only the backend
contract, so it runs on every backend.  Thread-safe: many processor threads may share one store.
"""

from ..backends import RowMutation, open_backend
from ..backends.base import MAX_CELL_BYTES
from ..checks import is_int
from ..config import parse_url
from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema.table_admin import create_tables
from ..search.engines import resolve_search_url
from . import counters, crashes, deletion, grouped_saves, inspect, listings, queue, reports, resubmissions, signature_reports
from . import cut_over
from .counter_deriver import derive_in_background
from .group_commit import MAX_GROUP_BYTES, MAX_GROUP_ITEMS, GroupCommit, GroupLanes
from .queue import DEFAULT_LEASE_SECONDS, DEFAULT_MAX_ATTEMPTS, DEFAULT_RESCAN_SECONDS, QUEUES, HeldClaims, QueuePass, take
from .search_access import StoreSearch, feed_in_background


#: Raw and processed groups in flight at once (see ``group_lanes``; measured in docs/performance.md).
DEFAULT_GROUP_LANES = 1


def _crash_id_of(prepared):
    return prepared.crash_id


def open_store(url=None, search_url=None, **options):
    """Open the store a URL names: ``url``, else ``$SOCORRO_STORE_URL``, else the embedded default.

    ``search_url``: the search engine (:mod:`socorro_store.search.engines`): else
    ``$SOCORRO_SEARCH_URL``, else the embedded engine in an embedded store's own directory, else
    none; ``"none"`` turns search off.  ``options`` go to :class:`CrashStore` (``forbidden_keys``,
    ``max_cell_bytes``, ``counter_flush_ms``, ``background_counters``, ``group_max_crashes``,
    ``group_max_bytes``, ``group_lanes``, ``queue_rescan_seconds``, ``search_feed``).
    """
    backend = open_backend(url)
    try:
        directory = backend.directory if parse_url(url).scheme == "embedded" else None
        return CrashStore(backend, search_url=resolve_search_url(search_url, directory), **options)
    except BaseException:
        backend.close()
        raise


class CrashStore:
    """Socorro's crash storage API.  A context manager; :meth:`close` releases the backend.

    ``forbidden_keys``: keys (dotted paths) removed by :meth:`get_processed`.
    ``max_cell_bytes``: the largest cell (row + column + value) accepted, 10 MiB by default; a
    dump over it is refused before anything is written.
    ``counter_flush_ms``: coalesce counter increments in memory and flush them as one call this
    often (and on close); None sends them with each save.  See :class:`counters.CounterBuffer`
    for the loss window (the next ``rollup`` repairs it).  ``live_counters.failures`` tallies the
    increments this store could not send (see :class:`counters.LiveCounters`).
    ``group_max_crashes`` / ``group_max_bytes``: the largest group of concurrent one-crash calls
    written together (see :mod:`group_commit`); ``raw_groups``, ``processed_groups`` and
    ``priority_groups`` count the groups and items written.
    ``group_lanes``: raw and processed groups in flight at once, each crash id always in the same
    lane (:class:`~.group_commit.GroupLanes`); more lanes overlap more round trips but make
    smaller groups (more calls per crash).  Priority requests keep one lane (a request names
    several crashes).
    ``background_counters``: hand each save's live counter increments to a sender thread that
    coalesces them and sends them while the save returns (:mod:`~.counter_sender`), so a save
    waits for its rows, not its counters; this store's counter reads wait for them first.  None
    (the default) does so where each backend call is a network round trip
    (:attr:`~socorro_store.backends.base.Backend.remote`: HBase, Bigtable), not on the embedded
    engine.  Exclusive with ``counter_flush_ms``.
    ``queue_rescan_seconds``: how long after a scan of a queue an empty poll may end on one read
    of the queue counters (:class:`~.queue_scans.EmptyPollGate`); 0 scans at every poll.
    ``search_url``: the search engine's URL (:mod:`socorro_store.search.engines`; None: no
    search).  ``search_feed``: feed it from a background thread, started by the first save or
    search (:mod:`.search_feed`); False feeds only in :meth:`settle` (a process whose feeding
    another process does); None (the default): ``$SOCORRO_SEARCH_FEED`` (``background``, the
    default, or ``inline``).
    """

    def __init__(self, backend, forbidden_keys=crashes.DEFAULT_FORBIDDEN_KEYS, max_cell_bytes=MAX_CELL_BYTES,
                 counter_flush_ms=None, group_max_crashes=MAX_GROUP_ITEMS, group_max_bytes=MAX_GROUP_BYTES,
                 group_lanes=DEFAULT_GROUP_LANES, queue_rescan_seconds=DEFAULT_RESCAN_SECONDS,
                 background_counters=None, search_url=None, search_feed=None):
        if not is_int(max_cell_bytes) or not 0 < max_cell_bytes <= MAX_CELL_BYTES:
            raise InvalidArgument(f"max_cell_bytes must be an int in 1..{MAX_CELL_BYTES}")
        if isinstance(forbidden_keys, str):
            forbidden_keys = [k.strip() for k in forbidden_keys.split(",") if k.strip()]
        self.backend = backend
        self.forbidden_keys = tuple(forbidden_keys)
        self.max_cell_bytes = max_cell_bytes
        #: claims taken through this store and not yet saved: what the take learned, so saving
        #: the crash need not read it again (:class:`~.claims.HeldClaims`)
        self.held_claims = HeldClaims()
        #: one pass per queue shared by this store's ``new_crashes()`` iterators: concurrent
        #: takers are claimed for together (:class:`~.queue.QueuePass`)
        self.queue_passes = {name: QueuePass(backend, name, rescan_seconds=queue_rescan_seconds,
                                             settle_counters=lambda: self.live_counters.settle(derived=False),
                                             held=self.held_claims)
                             for name in QUEUES}
        limits = {"max_items": group_max_crashes, "max_bytes": group_max_bytes}
        self.raw_groups = GroupLanes(
            lambda items: grouped_saves.save_raw_group(backend, self.live_counters, items),
            group_lanes, key=_crash_id_of, **limits)
        self.processed_groups = GroupLanes(
            lambda items: grouped_saves.save_processed_group(backend, self.live_counters, items, self.held_claims),
            group_lanes, key=_crash_id_of, **limits)
        self.priority_groups = GroupCommit(
            lambda items: grouped_saves.enqueue_priority_group(backend, self.live_counters, items), **limits)
        if background_counters is None:
            background_counters = backend.remote and counter_flush_ms is None
        elif not isinstance(background_counters, bool):
            raise InvalidArgument(f"background_counters must be True, False or None: {background_counters!r}")
        self.live_counters = counters.LiveCounters(backend, counter_flush_ms, background_counters,
                                                   derive_background=derive_in_background())
        if search_feed is None:
            search_feed = feed_in_background()
        elif not isinstance(search_feed, bool):
            raise InvalidArgument(f"search_feed must be True, False or None: {search_feed!r}")
        self.search = StoreSearch(backend, search_url, background_feed=search_feed)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            for queue_pass in self.queue_passes.values():
                queue_pass.close()
            self.live_counters.close()
            self.search.close()
        finally:
            self.backend.close()

    def flush_counters(self):
        """Send pending counter increments now: wait for the background sender, and flush the
        ``counter_flush_ms`` buffer (a no-op with neither); derive the counters of a cut-over
        store until caught up; and feed the search index until it holds this store's saves
        (:meth:`settle`)."""
        flushed = self.live_counters.flush()
        self._catch_up_derivation()
        self.search.settle()
        return flushed

    def settle(self, timeout=30.0):
        """Wait until this store's saves are in every derived view: its counters sent or derived,
        and the search index fed (inline where no other process holds the lease; never longer
        than ``timeout`` seconds for each).  Returns whether the search caught up."""
        self.live_counters.flush()
        self._catch_up_derivation(timeout)
        return self.search.settle(timeout)

    def _catch_up_derivation(self, timeout=30.0):
        """Derive what any process left waiting (not only this store's saves: a store's reads
        settle those alone), inline when the lease is free, else by waiting for its holder."""
        deriver = self.live_counters.deriver()
        if deriver is not None:
            deriver.catch_up(timeout)

    def cut_over_counters(self, progress=None, now=None):
        """Move this store's counters to the deriver (:func:`.cut_over.cut_over`): from
        then on its saves write change records and one process derives every metrics, signature
        and ranking counter from the crash rows.  Returns ``{"since", "crashes"}``."""
        from datetime import datetime, timezone

        self.live_counters.settle()
        return cut_over.cut_over(self.backend, self.live_counters.dimensions.admitter(self.backend),
                                        now or datetime.now(timezone.utc), progress)

    def derive(self, timeout=60.0, forever=False):
        """Derive this store's counters in this thread: until caught up (returns whether it did
        within ``timeout`` seconds), or with ``forever`` until interrupted (a ``socorro-store
        derive run`` worker, one of any number: they share the work under the lease).
        InvalidArgument for a store not cut over."""
        deriver = self.live_counters.deriver()
        if deriver is None:
            raise InvalidArgument("this store's counters are not derived yet: run `socorro-store derive cut-over`")
        if forever:
            deriver.run_forever()
        return deriver.catch_up(timeout)

    def derivation_status(self):
        """``{"cut_over": ISO time or None, "waiting", "lag_seconds", "deriving", ...}``."""
        since = cut_over.cut_over_at(self.backend)
        out = {"cut_over": since, "waiting": 0, "lag_seconds": None, "deriving": False}
        deriver = self.live_counters.deriver() if since is not None else None
        if deriver is not None:
            out.update(deriver.status())
        return out

    def create_tables(self, codec_map=None):
        """Create the tables from the specs (like ``tables create``); returns the report.

        ``codec_map`` (``{"LZO": "GZ"}``) creates families with a codec the cluster lacks under
        one it has (:func:`~socorro_store.schema.table_admin.create_tables`).
        """
        report = create_tables(self.backend, codec_map=codec_map)
        cut_over.forget(self.backend)  # a new store is cut over from its creation on
        return report

    # -- saving ------------------------------------------------------------------------------
    def save_raw_crash(self, raw_crash, dumps, crash_id):
        """Save one raw crash (annotations and dumps) and queue it for processing.

        Validated in the caller's thread (bad input raises a typed error and writes nothing),
        then written with the crashes of concurrent calls in one group (:mod:`group_commit`):
        returns once this crash is stored.

        Saving an id that is already stored (a collector retry) succeeds and writes nothing when
        the annotations and dumps are the same: the crash is never listed, queued or counted a
        second time, and a processed crash stays processed.  A retry whose annotations differ
        only in ``submitted_timestamp`` is the same crash re-stamped: the first submission time
        stands.  Any other difference raises :class:`CrashConflict` and writes nothing.  The
        one remaining window (the same id saved at the same moment through two stores) is in
        :mod:`resubmissions`.
        """
        crash = crashes.prepare_raw(raw_crash, dumps, crash_id, self.max_cell_bytes)
        self._check_fits([crash])
        try:
            self.raw_groups.submit(crash, grouped_saves.weight_of(crash.puts))
        finally:  # even a failed write may have queued it
            self._queued()

    def save_raw_crashes(self, items):
        """Save ``(raw_crash, dumps, crash_id)`` triples with one mutate per table touched.

        Every crash is validated, and checked against the stored crashes, before anything is
        written: one bad crash, or one :class:`CrashConflict`, fails the batch.  Retries of
        stored crashes are skipped as in :meth:`save_raw_crash`.  Returns how many crashes were
        new (written).
        """
        prepared = [crashes.prepare_raw(raw, dumps, cid, self.max_cell_bytes) for raw, dumps, cid in items]
        if not prepared:
            return 0
        self._check_fits(prepared)
        outcomes = resubmissions.sort_out(self.backend, prepared)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
        new = [crash for crash, outcome in zip(prepared, outcomes) if outcome == resubmissions.NEW]
        if new:
            try:
                crashes.write_raw(self.backend, new, self.live_counters)
            finally:
                self._queued()
        return len(new)

    def _check_fits(self, prepared):
        """Refuse, before any write, a crash whose row would not fit in one backend request
        (:class:`RequestTooLarge`): its pointers are written before its row."""
        for crash in prepared:
            self.backend.check_mutation_size(K.CRASH_REPORTS, crash.row_mutation())

    def save_processed(self, processed_crash):
        """Save a processed crash; removes its queue pointers and updates the counters.

        Validated in the caller's thread, then written in a group with concurrent calls; returns
        once it is stored.  :class:`CrashIDNotFound` (nothing written) for an unknown crash.
        """
        crash = crashes.prepare_processed(processed_crash, self.max_cell_bytes)
        self._check_fits([crash])
        self.processed_groups.submit(crash, grouped_saves.weight_of(crash.puts))
        self.search.saved()

    def save_processed_crashes(self, processed_crashes):
        prepared = [crashes.prepare_processed(p, self.max_cell_bytes) for p in processed_crashes]
        self._check_fits(prepared)
        if prepared:
            crashes.write_processed(self.backend, prepared, self.live_counters, self.held_claims)
            self.search.saved()
        return len(prepared)

    # -- reading -----------------------------------------------------------------------------
    def get_raw_crash(self, crash_id):
        return crashes.get_raw_crash(self.backend, crash_id)

    def get_raw_dump(self, crash_id, name=None):
        return crashes.get_raw_dump(self.backend, crash_id, name)

    def get_raw_dumps(self, crash_id):
        return crashes.get_raw_dumps(self.backend, crash_id)

    def get_raw_dumps_as_files(self, crash_id, directory, suffix=".TEMPORARY.dump"):
        return crashes.get_raw_dumps_as_files(self.backend, crash_id, directory, suffix)

    def get_processed(self, crash_id):
        """The processed crash without the forbidden keys."""
        return crashes.get_processed(self.backend, crash_id, self.forbidden_keys)

    def get_unredacted_processed(self, crash_id):
        return crashes.get_unredacted_processed(self.backend, crash_id)

    def get_processing_state(self, crash_id):
        return crashes.get_processing_state(self.backend, crash_id)

    # -- the queue ---------------------------------------------------------------------------
    def new_crashes(self, limit=None, queue="standard", processor_id=None, lease_seconds=DEFAULT_LEASE_SECONDS,
                    max_attempts=DEFAULT_MAX_ATTEMPTS):
        """Yield crash ids of ``queue`` in submission order, each owned by the caller when yielded.

        Leases are renewed while the iterator holds claims; closing it gives back the ones it
        never yielded.  A crash whose claims expired ``max_attempts`` times without a save is
        dead-lettered instead (:meth:`dead_lettered_crashes`; :meth:`enqueue_priority` requeues).
        """
        return take(self.backend, limit, queue, processor_id, lease_seconds, max_attempts=max_attempts,
                    held=self.held_claims, queue_pass=self.queue_passes.get(queue))

    def release(self, crash_id):
        """Give back a crash taken with :meth:`new_crashes` that will not be processed."""
        return self.release_crashes([crash_id])

    def release_crashes(self, crash_ids):
        """Give back crashes this store holds (not counted as failed attempts); returns how many."""
        if isinstance(crash_ids, str):
            crash_ids = [crash_ids]
        claims = self.held_claims.pop_many(list(crash_ids))
        return queue.release(self.backend, list(claims.values()))

    def dead_lettered_crashes(self, limit=None):
        """Crashes the queue stopped handing out: ``[{"crash_id", "attempts", "queue", ...}]``."""
        return queue.dead_lettered_crashes(self.backend, limit)

    def enqueue_priority(self, crash_ids):
        """Ask for (re)processing of existing crashes; returns how many were queued.

        A crash with a pending request is not queued again.  Written in a group with concurrent
        calls; :class:`CrashIDNotFound` (nothing queued) if any crash is unknown.
        """
        crash_ids = crashes.unique_crash_ids(crash_ids)
        if not crash_ids:
            return 0
        try:
            return self.priority_groups.submit(crash_ids, 64 * len(crash_ids))
        finally:
            self._queued()

    def _queued(self):
        """After this store wrote queue pointers: its next poll of each queue scans."""
        for queue_pass in self.queue_passes.values():
            queue_pass.empty_polls.note_queued()

    # -- queries -----------------------------------------------------------------------------
    def crashes_submitted(self, start, end):
        return crashes.crashes_submitted(self.backend, start, end)

    def crashes_by_signature(self, signature, start=None, end=None):
        # this store's saves first, once the arguments are valid: the signature index is derived
        return crashes.crashes_by_signature(self.backend, signature, start, end, settle=self.live_counters.settle)

    def hang_pair(self, hang_id):
        K.hang_row_key(hang_id)  # valid before settling
        self.live_counters.settle()  # this store's saves first: the hang-id rows are derived
        return crashes.hang_pair(self.backend, hang_id)

    # -- counters ----------------------------------------------------------------------------
    def get_metrics(self, row, product=None, version=None):
        """Plain counters of a metrics row; with ``product`` (``version``) that dimension's."""
        # this store's counters first, once the arguments are valid: it reads its own writes
        return counters.get_metrics(self.backend, row, product, version, settle=self.live_counters.settle)

    def get_signature_counters(self, signature, product=None, version=None, os=None):
        return counters.get_signature_counters(self.backend, signature, product, version, os,
                                               settle=self.live_counters.settle)

    def queue_sizes(self):
        self.live_counters.settle()  # this store's saves first (derived, on a cut-over store): it reads its own writes
        return counters.queue_sizes(self.backend)

    def set_active_installations(self, product, date, count):
        row, puts = counters.active_installations_put(product, date, count)
        self.backend.mutate_rows(K.METRICS, [RowMutation(row, puts)])

    # -- operating (the ``crash``, ``crashes``, ``queue`` and ``signatures`` commands) ---------
    def delete_crashes(self, crash_ids, missing_ok=False):
        """Delete crashes, their pointers, queue rows and claims, and take back what they counted.
        See :mod:`deletion`."""
        return deletion.delete_crashes(self.backend, crash_ids, missing_ok, self.live_counters,
                                       on_deleted=self.search.crashes_deleted)

    def crash_summary(self, crash_id):
        return inspect.crash_summary(self.backend, crash_id)

    def list_crashes(self, start, end, signature=None, limit=None, details=False):
        return inspect.list_crashes(self.backend, start, end, signature, limit, details,
                                    settle=self.live_counters.settle)

    def queue_status(self, now=None):
        """The queues (:func:`~.inspect.queue_status`), the search feed's lag under ``"search"``
        and the deriver's under ``"derivation"`` (:meth:`derivation_status`, after it)."""
        self.live_counters.settle()  # this store's counters first: it reads its own writes
        # the sizes it compares with the pointers are derived: what any process left, first
        self._catch_up_derivation(timeout=10.0)
        status = inspect.queue_status(self.backend, now)
        status["search"] = self.search.status()
        status["derivation"] = self.derivation_status()
        return status

    # -- search (:mod:`search_access`; the semantics: :mod:`socorro_store.search.contract`) ----
    def super_search(self, params, unredacted=False, now=None):
        """Super Search: ``params`` (a mapping of name -> value or list of values, or
        ``(name, value)`` pairs) as Socorro's ``/api/SuperSearch/`` takes them; returns
        ``{"hits", "total", "facets", "errors"}``.  ``unredacted=False`` refuses protected fields
        (:class:`~socorro_store.errors.ProtectedField`).  SearchParameterError for a bad
        parameter, SearchNotConfigured without a search engine."""
        return self.search.search(params, unredacted=unredacted, now=now)

    def search_fields(self, unredacted=True):
        """The searchable fields, as Socorro's ``/api/SuperSearchFields/`` lists them."""
        return self.search.fields(unredacted)

    def reindex_search(self, since=None, until=None, progress=None):
        """Rebuild the search index from the crash rows (see :meth:`StoreSearch.reindex`)."""
        return self.search.reindex(since, until, progress)

    def verify_search(self, since=None, until=None, repair=False, progress=None):
        """Compare the search index with the crash rows; ``repair`` sets right what differs (see
        :meth:`StoreSearch.verify`)."""
        return self.search.verify(since, until, repair, progress)

    def search_status(self):
        """The search engine, its documents, and the feed's lag (see :meth:`StoreSearch.status`)."""
        return self.search.status()

    def top_signatures(self, start, end, limit=reports.DEFAULT_TOP, product=None, version=None, os=None):
        """Top crashers of ``[start, end)``, of one product/version/OS if asked (:mod:`reports`)."""
        self.live_counters.settle()  # this store's counters first: it reads its own writes
        return reports.top_signatures(self.backend, start, end, limit, product, version, os)

    def signature_report(self, signature, now=None, product=None, version=None, os=None):
        self.live_counters.settle()  # this store's counters first: it reads its own writes
        return signature_reports.signature_report(self.backend, signature, now, product, version, os)

    def signature_breakdown(self, signature, start, end):
        """A signature's crashes of ``[start, end)`` (whole days) by product, version and OS."""
        self.live_counters.settle()  # this store's counters first: it reads its own writes
        return signature_reports.signature_breakdown(self.backend, signature, start, end)

    def signature_overview(self, signature, now, start, end, product=None, version=None, os=None,
                           with_counters=True):
        """``(signature_report, signature_breakdown)`` from one read of the signature's row;
        ``with_counters=False`` (a signature page): the report without ``counters``, from
        explicit columns only (:func:`~socorro_store.crashstore.signature_reports.signature_overview`)."""
        self.live_counters.settle()  # this store's counters first: it reads its own writes
        return signature_reports.signature_overview(self.backend, signature, now, start, end, product, version, os,
                                          with_counters=with_counters)

    def crashes_per_hour(self, now=None, hours=reports.CHART_HOURS):
        """``[[hour, crashes submitted]]`` of the last ``hours`` hours, from the metrics rows."""
        self.live_counters.settle()  # this store's counters first: it reads its own writes
        return reports.crashes_per_hour(self.backend, now, hours)

    def latest_crashes_by_signature(self, signature, limit=50, offset=0):
        """The newest crashes of a signature, paged: ``([(time, crash id)], more)``."""
        return listings.latest_crashes_by_signature(self.backend, signature, limit, offset,
                                                    settle=self.live_counters.settle)
