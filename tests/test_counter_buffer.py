"""Counter coalescing: ``open_store(url, counter_flush_ms=…)``."""

from jobs_helpers import UNTIL, expected_counters, ingest, live_counters, make_crashes
from store_helpers import counted_live

import logging
import threading

from socorro_store import open_store
from socorro_store.backends.base import Increment
from socorro_store.crashstore.counters import LiveCounters
from socorro_store.errors import BackendUnavailable, InvalidArgument
from socorro_store.jobs.rollup import run_rollup
from socorro_store.schema import keys as K


def test_increments_are_held_then_flushed_as_one_call(embedded_url):
    specs = make_crashes(30)
    with open_store(embedded_url, counter_flush_ms=3_600_000) as store:
        store.create_tables()
        counted_live(store)  # the buffer holds live increments (a cut-over store's are derived)
        store.backend.calls.clear()
        ingest(store, specs)
        assert store.backend.calls["increment_many"] == 0
        assert live_counters(store.backend) == ({}, {})
        sent = store.flush_counters()
        assert sent > 0
        assert store.backend.calls["increment_many"] == 1
        assert store.flush_counters() == 0  # nothing pending: no call
        assert store.backend.calls["increment_many"] == 1


def test_close_flushes_and_counts_are_those_of_an_unbuffered_store(embedded_url, tmp_path):
    specs = make_crashes(40)
    with open_store(embedded_url, counter_flush_ms=3_600_000) as store:
        store.create_tables()
        ingest(store, specs)
    plain_url = f"embedded://{tmp_path / 'plain'}"
    with open_store(plain_url) as plain:
        plain.create_tables()
        ingest(plain, specs)
        expected = live_counters(plain.backend)
    with open_store(embedded_url) as store:
        assert live_counters(store.backend) == expected


def test_background_flush(embedded_url):
    specs = make_crashes(10)
    with open_store(embedded_url, counter_flush_ms=20) as store:
        store.create_tables()
        ingest(store, specs)
        store.live_counters.buffer._thread.join(0.5)  # let the flusher run a few times
        assert store.live_counters.buffer._pending == {}
        metrics, _sigs = live_counters(store.backend)
        assert metrics


class RefusingBackend:
    """A backend whose increments fail (the flusher's call), signalling each attempt."""

    def __init__(self):
        self.attempts = threading.Event()

    def increment_many(self, increments):
        self.attempts.set()
        raise BackendUnavailable("the backend went away")


def test_a_failed_background_flush_is_logged_and_tallied(caplog):
    """The flusher thread has no caller to raise to: a failed flush is a warning in the log and
    cells in ``live_counters.failures``, as a failed unbuffered send is."""
    backend = RefusingBackend()
    live = LiveCounters(backend, flush_ms=10)
    try:
        with caplog.at_level(logging.WARNING, logger="socorro_store.crashstore.counters"):
            live.send([Increment(K.METRICS, b"2016-12-31T10", b"counters:x", 1),
                       Increment(K.METRICS, b"2016-12-31T11", b"counters:x", 2)])
            assert backend.attempts.wait(10)
            live.buffer._stop.set()
            live.buffer._thread.join()
    finally:
        live.buffer._stop.set()
    assert live.buffer.lost == 2 and live.failures["increments"] == 2
    assert any("2 cells failed" in r.getMessage() for r in caplog.records)


def test_lost_buffer_is_repaired_by_rollup(embedded_url):
    specs = make_crashes(40)
    store = open_store(embedded_url, counter_flush_ms=3_600_000)
    store.create_tables()
    ingest(store, specs)
    store.live_counters.buffer._pending.clear()  # the process died before the flush
    store.live_counters.buffer.close()
    store.backend.close()
    with open_store(embedded_url) as store:
        run_rollup(store.backend, until=UNTIL, since="2016-12-30")
        metrics, sigs = live_counters(store.backend)
    want_metrics, want_sigs = expected_counters(specs)
    closed = {row for row in want_metrics if row.startswith(b"2016")}
    assert {r: metrics.get(r) for r in closed} == {r: want_metrics[r] for r in closed}


def test_bad_flush_interval_is_refused(embedded_url):
    for bad in (0, -5, 1.5, True):
        try:
            open_store(embedded_url, counter_flush_ms=bad)
        except InvalidArgument:
            continue
        raise AssertionError(f"counter_flush_ms={bad!r} accepted")
