"""The search feed: every processed save reaches the search index, from the change records.

The ``store`` tests run on every backend kind (the records, the crash rows and the lease on each;
the search engine is the embedded one in a directory of its own), with the feed driven by
``settle()`` so that each step is deterministic.  The rest run on embedded stores.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta

import pytest

from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore import search_feed
from socorro_store.errors import SearchNotConfigured, SearchUnavailable
from socorro_store.schema import change_keys as C
from socorro_store.schema import keys as K

WEEK = {"date": [">=2016-09-12", "<2016-09-19"]}


@pytest.fixture
def store(backend_url, tmp_path):
    with open_store(backend_url, search_url=f"embedded://{tmp_path / 'search'}", search_feed=False) as s:
        s.create_tables()
        yield s


def _records(store):
    """The search feed's records (the deriver's, ``change:derive``, are its own)."""
    return [key for key, _cells in store.backend.scan(K.CHANGES, stop=C.RECORDS_STOP, columns=[K.COL_CHANGE_ID])]


def _save(store, n, signature="OOM | small", rng=None, **extra):
    ids = [crash_id(rng=rng) for _ in range(n)]
    for cid in ids:
        store.save_raw_crash(raw_crash(cid), {}, cid)
    for cid in ids:
        store.save_processed(processed(cid, signature=signature, date_processed=BASE_TIME.isoformat(), **extra))
    return ids


def _found(store, **params):
    response = store.super_search({**WEEK, "_results_number": "1000", "_columns": ["uuid", "signature"], **params},
                                  now=BASE_TIME)
    return {hit["uuid"]: hit["signature"] for hit in response["hits"]}


def test_a_processed_save_writes_one_record_and_settle_indexes_it(store):
    ids = _save(store, 3)
    assert len(_records(store)) == 3  # one per save, nothing consumed without a feeder
    stamps = store.backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(c) for c in ids], columns=[K.COL_CHANGED])
    assert {C.parse_change_record_key(k)[1] for k in _records(store)} == {c[K.COL_CHANGED] for c in stamps.values()}
    assert store.settle()
    assert _records(store) == []
    assert _found(store) == {cid: "OOM | small" for cid in ids}


def test_raw_saves_write_no_record(store):
    cid = crash_id()
    store.save_raw_crash(raw_crash(cid), {}, cid)
    assert _records(store) == []


def test_a_reprocessing_replaces_the_document(store):
    (cid,) = _save(store, 1)
    store.settle()
    store.save_processed(processed(cid, signature="js::RunScript", date_processed=BASE_TIME.isoformat()))
    store.settle()
    assert _found(store) == {cid: "js::RunScript"}
    assert _found(store, signature="=OOM | small") == {}


def test_a_deleted_crash_is_never_found_again(store):
    ids = _save(store, 4)
    store.settle()
    store.delete_crashes(ids[:2])
    assert set(_found(store)) == set(ids[2:])  # at once, without a feed pass
    assert _records(store) == []


def test_a_deletion_takes_the_records_of_its_crashes_with_it(store):
    ids = _save(store, 3)
    assert len(_records(store)) == 3  # not fed yet
    store.delete_crashes(ids[:1])
    assert all(ids[0] not in key.decode() for key in _records(store)) and len(_records(store)) == 2


def test_a_crash_deleted_while_a_feed_pass_runs_is_not_left_indexed(store):
    ids = _save(store, 2)
    feed = store.search.feed()
    real_get_rows, deleted = store.backend.get_rows, []

    def get_rows(table, rows, *args, **kwargs):
        found = real_get_rows(table, rows, *args, **kwargs)
        if table == K.CRASH_REPORTS and not deleted:  # the pass has read the rows: delete one now
            deleted.append(ids[0])
            store.delete_crashes([ids[0]])
        return found

    feed.backend = type("Racing", (), {"__getattr__": lambda _self, name: getattr(store.backend, name),
                                       "get_rows": staticmethod(get_rows)})()
    out = feed.feed_pass()
    assert deleted and out["indexed"] == 2 and out["removed"] == 1
    assert set(_found(store)) == {ids[1]}


def test_a_deletion_while_the_engine_is_down_is_left_to_the_feed(store):
    ids = _save(store, 3)
    store.settle()
    switch = _EngineDown(store.search.engine())
    store.search._engine = switch
    store.delete_crashes(ids[:1])  # the rows go; the engine is told through a record
    assert len(_records(store)) == 1
    switch.down = False
    store.search.feed().engine = switch
    store.settle()
    assert set(_found(store)) == set(ids[1:]) and _records(store) == []


def test_a_record_whose_save_has_not_landed_is_kept_then_given_up(store, monkeypatch):
    (cid,) = _save(store, 1)
    store.settle()
    # a save that wrote its record and then failed before its crash row: the row keeps the old stamp
    stamp = C.new_stamp()
    store.backend.mutate_rows(K.CHANGES, [search_feed.RowMutation(C.change_record_key(cid, stamp),
                                                                  {K.COL_CHANGE_ID: cid.encode()})])
    feed = store.search.feed()
    assert feed.feed_pass()["kept"] == 1
    assert len(_records(store)) == 1
    monkeypatch.setattr(feed, "pending_ns", 0)  # older than the pending window: the row says what the crash is
    assert feed.feed_pass()["kept"] == 0
    assert _records(store) == [] and set(_found(store)) == {cid}


class _EngineDown:
    """The real engine behind a switch: while ``down``, every call fails as an unreachable engine."""

    def __init__(self, engine):
        self.engine, self.down = engine, True

    def __getattr__(self, name):
        attr = getattr(self.engine, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            if self.down:
                raise SearchUnavailable("search engine down (test)")
            return attr(*args, **kwargs)

        return call


def test_saves_go_on_while_the_engine_is_down_and_the_index_catches_up(store):
    feed = store.search.feed()
    switch = _EngineDown(feed.engine)
    feed.engine = switch
    ids = _save(store, 5)
    assert store.settle(timeout=1) is False  # the feed could not index: nothing consumed
    assert len(_records(store)) == 5
    switch.down = False
    assert store.settle()
    assert set(_found(store)) == set(ids) and _records(store) == []


def test_the_feed_lease_keeps_a_second_feeder_out_until_it_expires(tmp_path):
    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_feed=False) as first, open_store(url, search_feed=False) as second:
        first.create_tables()
        ids = _save(first, 2)
        assert first.search.feed().feed_pass()["indexed"] == 2
        _save(first, 1)
        assert second.search.feed().feed_pass() is None  # the first holds the lease
        first.search.feed().lease.until = 0  # the first process is gone: its lease expires
        first.backend.mutate_rows(K.CHANGES, [search_feed.RowMutation(C.FEED_LEASE_ROW, {
            K.COL_CHANGE_LEASE: b"gone|%d" % (time.time_ns() - 1)})])
        assert second.search.feed().feed_pass()["indexed"] == 1
        assert len(_found(second)) == 3 and set(ids) <= set(_found(second))


def test_search_status_reports_the_records_waiting(store):
    _save(store, 3)
    status = store.search_status()
    assert status["configured"] and status["pending"] == 3 and status["lag_seconds"] >= 0
    store.settle()
    status = store.queue_status()["search"]
    assert status["pending"] == 0 and status["lag_seconds"] is None and status["documents"] == 3


def test_reindex_rebuilds_the_index_from_the_crash_rows(tmp_path):
    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_feed=False) as store:
        store.create_tables()
        ids = _save(store, 6)
        store.settle()
        before = store.super_search(WEEK, now=BASE_TIME)
    os.remove(tmp_path / "store" / "search.sqlite3")
    with open_store(url, search_feed=False) as store:
        assert store.search_status()["documents"] == 0
        done = []
        report = store.reindex_search(progress=done.append)
        assert report["indexed"] == 6 and sum(done) == 6
        assert store.super_search(WEEK, now=BASE_TIME) == before
        assert store.reindex_search("2016-09-18", "2016-09-19")["indexed"] == 6  # idempotent
        assert set(_found(store)) == set(ids)


def test_a_store_with_search_off_says_so(tmp_path):
    with open_store(f"embedded://{tmp_path / 'store'}", search_url="none") as store:
        store.create_tables()
        with pytest.raises(SearchNotConfigured, match="no search configured"):
            store.super_search({})
        assert store.search_status()["configured"] is False


_WRITER = textwrap.dedent("""
    import sys, random
    sys.path.insert(0, {tests!r})
    from store_helpers import BASE_TIME, crash_id, processed, raw_crash
    from socorro_store import open_store
    store = open_store({url!r}, search_feed=True)  # its background feeder holds the lease
    rng = random.Random(7)
    n = 0
    while True:
        cid = crash_id(rng=rng)
        store.save_raw_crash(raw_crash(cid), {{}}, cid)
        store.save_processed(processed(cid, signature="sig%d" % (n % 5), date_processed=BASE_TIME.isoformat()))
        n += 1
        if n == 20:
            print("ready", flush=True)
""")


def test_a_feeding_writer_killed_mid_ingest_loses_no_save(tmp_path):
    """SIGKILL a process that saves and feeds (its background feeder holds the lease); another
    process takes the lease over once it expires, and the index ends equal to the crash rows."""
    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url) as store:
        store.create_tables()
    script = _WRITER.format(tests=os.path.dirname(__file__), url=url)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # saving and feeding
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    with open_store(url, search_feed=False) as store:
        feed = store.search.feed()
        feed.lease.term_ns = int(0.2e9)
        # the dead writer's lease is left to expire (LEASE_SECONDS), as it would in production
        lease = store.backend.get_row(K.CHANGES, C.FEED_LEASE_ROW).get(K.COL_CHANGE_LEASE, b"")
        holder, _, until = lease.rpartition(b"|")
        assert holder and holder != feed.lease.holder
        store.backend.mutate_rows(K.CHANGES, [search_feed.RowMutation(C.FEED_LEASE_ROW, {
            K.COL_CHANGE_LEASE: holder + b"|%d" % (time.time_ns() + int(0.3e9))})])  # expiring soon
        assert store.settle(timeout=20)
        processed_rows = {K.crash_id_from_row_key(row): cells[K.COL_SIGNATURE].decode()
                          for row, cells in store.backend.scan(K.CRASH_REPORTS, columns=[K.COL_SIGNATURE])
                          if K.COL_SIGNATURE in cells}
        assert len(processed_rows) >= 20
        found = _found(store)
        # a save killed between its record and its crash row leaves a record the feed keeps for
        # the pending window; what is indexed equals the crash rows either way
        assert found == processed_rows


def test_ping_and_queue_status_show_how_far_derivation_lags(tmp_path):
    import json

    from cli_helpers import run

    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_feed=False) as store:
        store.create_tables()
        _save(store, 2)
    answer = json.loads(run(url, "ping", "--json").stdout)
    assert answer["changes_waiting"] == 2 and answer["derivation_lag_seconds"] >= 0
    printed = run(url, "queue", "status").stdout
    assert "search feed: 2 changes waiting, oldest" in printed
    with open_store(url, search_feed=False) as store:
        store.settle()
    answer = json.loads(run(url, "ping", "--json").stdout)
    assert answer["changes_waiting"] == 0 and answer["derivation_lag_seconds"] is None
    assert "search feed: 0 changes waiting, 2 crashes indexed" in run(url, "queue", "status").stdout


def test_the_global_search_url_option_reaches_every_command(tmp_path):
    from click.testing import CliRunner

    from socorro_store.cli import main

    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_feed=False) as store:
        store.create_tables()
        _save(store, 2)
        store.settle()

    def status(*options):
        result = CliRunner().invoke(main, ["--url", url, *options, "queue", "status"], catch_exceptions=False)
        return next(line for line in result.stdout.splitlines() if line.startswith("search"))

    assert status() == "search feed: 0 changes waiting, 2 crashes indexed"
    assert status("--search-url", "none").startswith("search (not configured) feed:")
    elsewhere = tmp_path / "elsewhere"
    assert status("--search-url", f"embedded://{elsewhere}").endswith("0 crashes indexed")
    assert (elsewhere / "search.sqlite3").exists()


def test_a_document_the_engine_refuses_is_dead_lettered_not_retried_for_ever(store):
    ids = _save(store, 3)
    feed = store.search.feed()
    real_index = feed.engine.index

    def refuse_one(documents):
        if any(doc["uuid"] == ids[1] for doc in documents):
            raise ValueError("this document cannot be indexed")
        return real_index(documents)

    feed.engine.index = refuse_one
    assert store.settle()
    assert _records(store) == []  # consumed: the feed goes on
    assert set(_found(store)) == {ids[0], ids[2]}
    status = store.search_status()
    assert [d["crash_id"] for d in status["dead_lettered"]] == [ids[1]]
    assert "cannot be indexed" in status["dead_lettered"][0]["problem"]
    feed.engine.index = real_index  # fixed: reindex takes it back and clears the dead letter
    assert store.reindex_search()["indexed"] == 3
    assert set(_found(store)) == set(ids) and store.search_status()["dead_lettered"] == []


def test_a_dead_lettered_crash_the_feed_indexes_later_leaves_the_dead_letters(store):
    ids = _save(store, 2)
    feed = store.search.feed()
    real_index = feed.engine.index

    def refuse_one(documents):
        if any(doc["uuid"] == ids[1] and doc.get("signature") == "OOM | small" for doc in documents):
            raise ValueError("this document cannot be indexed")
        return real_index(documents)

    feed.engine.index = refuse_one
    assert store.settle()
    assert [d["crash_id"] for d in store.search_status()["dead_lettered"]] == [ids[1]]
    # a reprocessing the engine takes: the feed indexes it, and the dead letter is no more
    store.save_processed(processed(ids[1], signature="js::RunScript", date_processed=BASE_TIME.isoformat()))
    assert store.settle()
    assert _found(store) == {ids[0]: "OOM | small", ids[1]: "js::RunScript"}
    assert store.search_status()["dead_lettered"] == []


def test_expire_crashes_takes_the_crashes_out_of_the_search_index(tmp_path):
    from cli_helpers import run

    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_feed=False) as store:
        store.create_tables()
        ids = _save(store, 3)
        store.settle()
        assert set(_found(store)) == set(ids)
    result = run(url, "expire-crashes", "--before", "2016-09-19")
    assert result.exit_code == 0, result.stderr
    with open_store(url, search_feed=False) as store:
        assert _found(store) == {} and store.search_status()["documents"] == 0


def test_the_demo_leaves_every_crash_searchable(tmp_path):
    from socorro_store.demo import run_demo

    url = f"embedded://{tmp_path / 'demo'}"
    report = run_demo(url, crashes=120, processors=2, dump_kb=0, seed=3)
    with open_store(url, search_feed=False) as store:
        status = store.search_status()
        assert status["pending"] == 0 and status["documents"] == 120
        everything = store.super_search({"date": [">=2000-01-01", "<2100-01-01"], "_results_number": "0",
                                         "_facets": "_cardinality.uuid"})
        assert everything["total"] == 120 and everything["facets"]["cardinality_uuid"] == {"value": 120}
    assert report


def test_an_imported_crash_is_searchable_when_import_returns(tmp_path):
    from cli_helpers import run

    source, target = f"embedded://{tmp_path / 'source'}", f"embedded://{tmp_path / 'target'}"
    with open_store(source, search_url="none") as store:
        store.create_tables()
        ids = _save(store, 2)
    stream = tmp_path / "day.msgpack"
    assert run(source, "export", "--day", "2016-09-18", "-o", str(stream)).exit_code == 0
    result = run(target, "import", "--create", str(stream))
    assert result.exit_code == 0, result.stderr
    with open_store(target, search_feed=False) as store:
        assert store.search_status()["pending"] == 0 and set(_found(store)) == set(ids)


def test_reindex_of_a_day_keeps_a_crash_whose_id_is_dated_the_day_after(store):
    """Submitted at 23:59 on the 17th under an id dated the 18th: reindexing the 17th reads the
    crash rows of ids dated the 17th, and must not take the document for a deleted crash."""
    late = BASE_TIME.replace(hour=0, minute=0) - timedelta(minutes=1)
    cid = crash_id()
    store.save_raw_crash(raw_crash(cid, submitted=late), {}, cid)
    store.save_processed(processed(cid, date_processed=late.isoformat()))
    store.settle()
    assert store.reindex_search("2016-09-17", "2016-09-18") == {"indexed": 0, "removed": 0, "days": 1}
    assert set(_found(store)) == {cid}


def test_the_background_feeder_indexes_saves_without_settle(tmp_path):
    url = f"embedded://{tmp_path / 'store'}"
    with open_store(url, search_feed=True) as store:
        store.create_tables()
        ids = _save(store, 3)
        deadline = time.monotonic() + 30
        while set(_found(store)) != set(ids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(_found(store)) == set(ids) and store.search.feed().holds_lease
    assert not [t for t in threading.enumerate() if t.name == "search-feed"]  # closed with the store


def test_the_feed_mode_comes_from_the_environment(monkeypatch, tmp_path):
    from socorro_store.crashstore.search_access import feed_in_background
    from socorro_store.errors import ConfigError, InvalidArgument

    monkeypatch.setenv("SOCORRO_SEARCH_FEED", "background")
    assert feed_in_background() is True
    monkeypatch.setenv("SOCORRO_SEARCH_FEED", "inline")
    assert feed_in_background() is False
    monkeypatch.setenv("SOCORRO_SEARCH_FEED", "sometimes")
    with pytest.raises(ConfigError, match="background or inline"):
        open_store(f"embedded://{tmp_path / 'store'}")
    with pytest.raises(InvalidArgument):
        open_store(f"embedded://{tmp_path / 'store'}", search_feed="yes")


def test_a_deleted_crash_leaves_no_feed_dead_letter(store):
    from socorro_store.crashstore.search_feed import dead_letter

    (cid,) = _save(store, 1)
    store.settle()
    dead_letter(store.backend, cid, "refused once")
    assert [d["crash_id"] for d in store.search_status()["dead_lettered"]] == [cid]
    store.delete_crashes([cid])
    assert store.search_status()["dead_lettered"] == []
    assert not [row for row, _ in store.backend.scan(K.CHANGES) if cid.encode() in row]
