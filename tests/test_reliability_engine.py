"""Reliability of the embedded engine under many threads (issue 21, defect 5).

The engine used to open one SQLite reader connection per thread and per table and close none of
them until the engine closed: a thread-per-request server leaked two file descriptors (the
database and its write-ahead log) per table for every thread it ever ran.  Readers now come from
a bounded pool per table.  These tests count open file descriptors (``/proc/self/fd``) and the
pool's connections; they never measure time.
"""

import os
import threading

import pytest

from socorro_store.engine import Engine
from socorro_store.schema.specs import FamilySpec

TABLES = ("a", "b", "c")
THREADS = 300


def open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def engine(tmp_path):
    eng = Engine(str(tmp_path / "store"))
    for name in TABLES:
        eng.create_table(name, [FamilySpec(name="f")])
        eng.mutate(name, [(b"r%03d" % i, [(b"f", b"q", b"v")], [], False) for i in range(20)])
    yield eng
    eng.close()


def _read_everything(engine, out):
    for name in TABLES:
        out.append(len(engine.get(name, [b"r001", b"r002"])))
        out.append(sum(1 for _ in engine.scan(name, page_size=7)))


def test_short_lived_threads_leave_a_bounded_number_of_connections(engine):
    """Each of many short-lived threads reads every table once; afterwards the open descriptors
    are bounded by the pools, not by the number of threads that ever read."""
    _read_everything(engine, [])  # open what one reader opens, so the baseline includes it
    before = open_fds()
    results = []
    for _ in range(THREADS):
        thread = threading.Thread(target=_read_everything, args=(engine, results))
        thread.start()
        thread.join()
    assert results == [2, 20] * len(TABLES) * THREADS  # every read worked
    grown = open_fds() - before
    # One thread at a time: the pools reuse what the first reader opened.  (Before the fix: two
    # descriptors per table per thread, 1,800 here.)
    assert grown <= 2 * len(TABLES), grown
    assert engine.reader_connections() <= len(TABLES)


def test_concurrent_readers_stay_within_the_pool_bound(tmp_path):
    """Many threads reading at once: no table ever has more than ``max_readers`` connections
    open, and once they are done the engine holds at most that many per table."""
    eng = Engine(str(tmp_path / "store"), max_readers=4)
    try:
        eng.create_table("t", [FamilySpec(name="f")])
        eng.mutate("t", [(b"r%03d" % i, [(b"f", b"q", b"v" * 100)], [], False) for i in range(200)])
        before = open_fds()
        start = threading.Barrier(40)
        seen, errors = [], []

        def reader():
            try:
                start.wait()
                for _ in range(5):
                    assert sum(1 for _ in eng.scan("t", page_size=16)) == 200
                    seen.append(eng.reader_connections())
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        assert max(seen) <= 4
        assert open_fds() - before <= 2 * 4
    finally:
        eng.close()


def test_a_scan_holds_no_connection_between_pages(engine):
    """A paused scan (a gateway scanner between two fetches) holds no reader, so another thread
    resuming it never shares a connection, or a transaction, with a concurrent read."""
    rows = engine.scan("a", page_size=5)
    assert next(rows)[0] == b"r000"
    assert engine.reader_connections(in_use=True) == 0
    out = []
    resumer = threading.Thread(target=lambda: out.extend(rows))
    resumer.start()
    resumer.join()
    assert [row for row, _cells in out] == [b"r%03d" % i for i in range(1, 20)]
    assert engine.reader_connections(in_use=True) == 0


def test_closing_the_engine_closes_every_reader(tmp_path):
    before = open_fds()
    eng = Engine(str(tmp_path / "store"))
    eng.create_table("t", [FamilySpec(name="f")])
    eng.mutate("t", [(b"r", [(b"f", b"q", b"v")], [], False)])
    threads = [threading.Thread(target=lambda: eng.get("t", [b"r"])) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = eng.scan("t")
    next(rows, None)
    eng.close()
    assert open_fds() == before
