"""A store's search: its engine, its feed, and the calls the store answers with them.

The engine is the one the store's search URL names (:mod:`socorro_store.search.engines`), opened
on first use.  The first save or search starts a background feeder in this process
(:class:`~.search_feed.SearchFeed`); one process at a time feeds, under the feed lease.
"""

import logging
import os
import threading
from datetime import datetime, timedelta, timezone

from ..errors import (BackendError, BackendUnavailable, ConfigError, InvalidArgument, SearchNotConfigured,
                      SearchUnavailable)
from ..schema import keys as K
from ..schema.specs import SALTS
from ..schema.timeparse import parse_day
from ..search.engines import open_search_engine, shown_url
from . import change_records
from .search_feed import (ROW_COLUMNS, SearchFeed, crash_document, dead_lettered, index_documents, pending_changes,
                          revive_dead_letters)
from .search_verify import verify_search

log = logging.getLogger(__name__)

#: ``background`` (the default) or ``inline``: whether a store feeds from a thread of its own
FEED_ENV_VAR = "SOCORRO_SEARCH_FEED"
_FEED_MODES = {"background": True, "inline": False}


def feed_in_background():
    """Whether stores feed from a background thread: ``$SOCORRO_SEARCH_FEED`` (``background``,
    the default, or ``inline``: only ``settle()`` feeds, for a process whose feeding a
    dedicated one does).  ConfigError for another value."""
    mode = os.environ.get(FEED_ENV_VAR, "background").strip().lower() or "background"
    if mode not in _FEED_MODES:
        raise ConfigError(f"{FEED_ENV_VAR} must be background or inline, not {mode!r}")
    return _FEED_MODES[mode]


#: crash rows read per call by ``reindex``
REINDEX_PAGE = 500


class StoreSearch:
    """The search side of one :class:`~.store.CrashStore` (thread-safe)."""

    def __init__(self, backend, search_url, background_feed=True):
        self.backend, self.url, self.background_feed = backend, search_url, background_feed
        self._engine = self._feed = None
        self._lock = threading.Lock()

    @property
    def configured(self):
        return self.url is not None

    def engine(self):
        if self.url is None:
            raise SearchNotConfigured("this store has no search configured (give a search URL: --search-url, "
                                      "SOCORRO_SEARCH_URL or open_store(search_url=...))")
        with self._lock:
            if self._engine is None:
                self._engine = open_search_engine(self.url)
            return self._engine

    def feed(self):
        """The feed, started (with its background feeder) on first call; None without search or
        change records."""
        if self.url is None:
            return None
        engine = self.engine()
        with self._lock:
            if self._feed is None:
                if not change_records.enabled(self.backend):
                    return None
                self._feed = SearchFeed(self.backend, engine, background=self.background_feed)
            return self._feed

    def saved(self):
        """A save landed: make sure this process feeds, and feeds now (with a background feeder;
        without one, ``settle`` feeds)."""
        if self.url is None or not self.background_feed:
            return
        feed = self._feed or self.feed()
        if feed is not None:
            feed.poke()

    def settle(self, timeout=30.0):
        """Feed until this store's saves are in the index (see :meth:`SearchFeed.catch_up`).
        A search engine that is down is left to catch up later: saves never wait for it."""
        feed = self.feed() if self.url is not None else None
        if feed is None:
            return True
        try:
            return feed.catch_up(timeout)
        except (SearchUnavailable, BackendUnavailable, BackendError):
            return False

    def crashes_deleted(self, crash_ids):
        """Remove deleted crashes (their rows already gone) from the search index at once.

        An engine that cannot be reached is told later: a change record per crash (its id, no
        data) has the feed remove it.  A store with no search configured has nothing to tell;
        an index elsewhere keeps the crashes until ``search reindex`` of their days, so delete
        with the search URL the feeders use (docs/search.md).  A feed pass that read a crash
        row before its deletion checks the rows again after indexing (:mod:`.search_feed`)."""
        if self.url is None or not crash_ids:
            return
        try:
            self.engine().delete(crash_ids)
        except (SearchUnavailable, BackendUnavailable, BackendError):
            log.warning("search engine unreachable: %d deleted crashes left to the feed", len(crash_ids))
            change_records.record_deletions(self.backend, crash_ids)

    def search(self, params, unredacted=False, now=None):
        from ..search.query import parse_search

        query = parse_search(params, now=now, unredacted=unredacted)
        engine = self.engine()
        self.feed()
        return engine.search(query)

    def fields(self, unredacted=True):
        from ..search.query import fields_document

        return fields_document(unredacted=unredacted)

    def status(self):
        """``{"configured", "url", "documents", "pending", "lag_seconds", "feeding", "last_error",
        "dead_lettered": [{"crash_id", "problem"}] (up to 100)}``."""
        out = {"configured": self.configured, "url": shown_url(self.url), "documents": None, "pending": 0, "lag_seconds": None,
               "feeding": False, "last_error": None, "dead_lettered": []}
        if change_records.enabled(self.backend):
            out["pending"], age = pending_changes(self.backend)
            out["dead_lettered"] = [{"crash_id": cid, "problem": problem} for cid, problem in dead_lettered(self.backend)]
            out["lag_seconds"] = None if age is None else round(age, 3)
        if self.configured:
            try:
                out["documents"] = self.engine().count()
            except SearchUnavailable as exc:
                out["last_error"] = str(exc)
            if self._feed is not None:
                out["feeding"] = self._feed.holds_lease
                out["last_error"] = out["last_error"] or self._feed.last_error
        return out

    def reindex(self, since=None, until=None, progress=None):
        """Index every processed crash row of the crash-id days ``[since, until)`` again (``until``
        defaults to today inclusive; neither: every crash row), and remove the documents of
        crashes of those days no longer stored.  Idempotent; the feed goes on beside it.
        ``progress(n)`` is called with each page's number of crash rows."""
        since, until = _days(since, until)
        engine = self.engine()
        out = {"indexed": 0, "removed": 0, "days": 0}
        seen, still_dead = set(), set()
        for page in _crash_row_pages(self.backend, since, until):
            documents = []
            for row, cells in page:
                try:
                    crash_id = K.crash_id_from_row_key(row)
                except InvalidArgument:
                    continue  # Socorro's pre-salt rows and strays: not indexed
                seen.add(crash_id)
                document = crash_document(crash_id, cells)
                if document is not None:
                    documents.append(document)
            if documents:
                documents, dead = index_documents(self.backend, engine, documents)
                still_dead.update(dead)
            out["indexed"] += len(documents)
            if progress is not None:
                progress(len(page))
        bounds = _bounds(since, until)
        revive_dead_letters(self.backend, seen - still_dead)
        stale = _gone(self.backend, [cid for cid in engine.crash_ids(*bounds) if cid not in seen])
        if stale:
            engine.delete(stale)
        out["removed"] = len(stale)
        if since is not None and until is not None:
            out["days"] = (until - since).days
        return out

    def verify(self, since=None, until=None, repair=False, progress=None):
        """Compare the search index with the crash rows of the crash-id days ``[since, until)``
        (as :meth:`reindex` reads them), and its documents dated in those days with the rows
        they name; ``repair``: set right what differs (:mod:`.search_verify`).  The feed goes on
        beside it: what it has yet to index is reported as pending."""
        since, until = _days(since, until)
        engine = self.engine()
        report = verify_search(self.backend, engine, _crash_row_pages(self.backend, since, until),
                               _bounds(since, until), repair=repair, progress=progress)
        report["days"] = (until - since).days if since is not None else None
        return report

    def close(self):
        with self._lock:
            feed, engine, self._feed, self._engine = self._feed, self._engine, None, None
        if feed is not None:
            feed.close()
        if engine is not None:
            engine.close()


def _days(since, until):
    """``(since, until)`` dates of the crash-id days asked (``until`` defaults to today
    inclusive; neither: None, None, every day).  InvalidArgument for a bad or empty range."""
    if since is None and until is not None:
        raise InvalidArgument("--until needs --since")
    since = parse_day(since, "since")[0].date() if since is not None else None
    until = parse_day(until, "until")[0].date() if until is not None else None
    if since is not None and until is None:
        until = datetime.now(timezone.utc).date() + timedelta(days=1)
    if since is not None and until <= since:
        raise InvalidArgument("--until must be after --since")
    return since, until


def _bounds(since, until):
    """The documents' ``date`` range of the days ``[since, until)``: aware datetimes or None."""
    return tuple(None if d is None else datetime(d.year, d.month, d.day, tzinfo=timezone.utc) for d in (since, until))


def _gone(backend, crash_ids):
    """The crashes of ``crash_ids`` with no crash row.  A document dated in the days read whose
    crash id is dated the day beside (submitted just before midnight) is not stale."""
    gone = []
    for i in range(0, len(crash_ids), REINDEX_PAGE):
        page = {K.crash_row_key(cid): cid for cid in crash_ids[i:i + REINDEX_PAGE]}
        found = backend.get_rows(K.CRASH_REPORTS, list(page), columns=[K.COL_OOID])
        gone += [cid for key, cid in page.items() if K.COL_OOID not in found.get(key, {})]
    return gone


def _crash_row_pages(backend, since, until):
    """Pages of ``(row, cells)`` of the crash rows of ``[since, until)`` (crash-id days), or of
    every crash row."""
    if since is None and until is None:
        yield from _pages(backend.scan(K.CRASH_REPORTS, columns=ROW_COLUMNS, page_size=REINDEX_PAGE))
        return
    day = since
    while day < until:
        for salt in SALTS:
            yield from _pages(backend.scan(K.CRASH_REPORTS, prefix=K.crash_day_prefix(salt, day), columns=ROW_COLUMNS,
                                           page_size=REINDEX_PAGE))
        day += timedelta(days=1)


def _pages(rows):
    page = []
    for item in rows:
        page.append(item)
        if len(page) == REINDEX_PAGE:
            yield page
            page = []
    if page:
        yield page
