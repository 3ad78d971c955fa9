"""What the hot paths cost in backend calls (``backend.calls``: one per round trip), never time.

* a processed save: on HBase's Thrift1 the follow-up cells of a group's multi-cell
  check-and-puts go in one ``mutateRows``, not one per crash; where a multi-cell check-and-put is
  atomic (embedded, Bigtable), a first processing's existence and ``flags:processed`` checks are
  one check;
* polling: an empty queue costs one read of its counters (a scan, on Thrift1 its open and one
  fetch, when a rescan is due), a ``limit=1`` take reads two candidates, not a page, and the
  metrics rows of a minute are formatted once.
"""

import random

import pytest
from store_helpers import BASE_TIME, counted_live, crash_id, processed, raw_crash

from socorro_store.errors import InvalidArgument
from socorro_store.schema import keys as K
from socorro_store.schema.stored import time_index_key_forms

GROUP = 5


def _spent(backend, action):
    """``(result, Counter of the calls action made)``."""
    before = backend.calls.copy()
    result = action()
    return result, backend.calls - before


def _queued_crashes(store, n, seed, submitted=BASE_TIME):
    rng = random.Random(seed)
    ids = [crash_id(salt="0123456789abcdef"[i % 16], rng=rng) for i in range(n)]
    store.save_raw_crashes([(raw_crash(cid, submitted, legacy_processing=0), {}, cid) for cid in ids])  # both queues
    return ids


def test_check_and_put_many_sends_the_follow_up_cells_of_a_wave_in_one_mutate(backend):
    from socorro_store.schema.specs import TableSpec, FamilySpec  # noqa: PLC0415

    backend.create_table(TableSpec("t", [FamilySpec("f")]))
    rows = [b"r%d" % i for i in range(GROUP)]
    items = [(row, b"f:a", None, {b"f:a": b"1", b"f:b": b"2", b"f:c": b"3"}) for row in rows]
    # a later item on rows[0] checks a cell the first one writes as a follow-up: it must see it
    items.append((rows[0], b"f:c", b"3", {b"f:d": b"4"}))
    won, spent = _spent(backend, lambda: backend.check_and_put_many("t", items))
    assert won == [True] * (GROUP + 1)
    assert backend.get_row("t", rows[0]) == {b"f:a": b"1", b"f:b": b"2", b"f:c": b"3", b"f:d": b"4"}
    assert all(backend.get_row("t", row) == {b"f:a": b"1", b"f:b": b"2", b"f:c": b"3"} for row in rows[1:])
    if backend.atomic_check_and_put:
        assert sum(spent.values()) <= len(items)
        assert "mutate_rows" not in spent
    else:  # one checkAndPut each, and one mutateRows for the first wave's follow-ups (none after)
        assert spent == {"check_and_put": GROUP + 1, "mutate_rows": 1}


def _inline(store):
    """A store on the same backend whose counters go in the caller's thread: a background send
    (a dimension registry's put) would land among the calls a test counts."""
    from socorro_store.crashstore.store import CrashStore  # noqa: PLC0415

    return CrashStore(store.backend, background_counters=False)


@pytest.mark.parametrize("cut_over", [True, False], ids=["derived", "live"])
def test_a_processed_group_costs_its_checks_and_one_call_per_table(store, cut_over):
    if not cut_over:
        counted_live(store)
    store = _inline(store)
    backend = store.backend
    ids = _queued_crashes(store, GROUP, seed=23)
    taken = list(store.new_crashes(limit=GROUP, queue="legacy"))
    assert sorted(taken) == sorted(ids)
    _none, spent = _spent(backend, lambda: store.save_processed_crashes(
        [processed(cid, signature=f"sig{i}") for i, cid in enumerate(ids)]))
    assert all(store.get_processed(cid)["signature"] == f"sig{i}" for i, cid in enumerate(ids))
    state = store.get_processing_state(ids[0])
    assert state["processed"]
    # Live, the pointers this store's collector wrote are dequeued by the N -> Y check that
    # counts the crash; only Socorro's 19-character form (BASE_TIME is a whole second) is
    # checked pointer by pointer, as another writer (Socorro's new_crashes) may have taken it.
    # Derived, nothing is counted by a check: one check a crash, its row's existence.
    foreign = 0 if cut_over else sum(len(time_index_key_forms(cid, BASE_TIME)) - 1 for cid in ids)
    assert foreign == (0 if cut_over else GROUP)
    if backend.atomic_check_and_put:
        # the first-processing check writes the row and proves it exists, then (live) the two
        # queues' foreign pointer takes: three batches of checks
        if "check_and_put_many" in spent:  # one call per batch (the embedded engine)
            assert spent["check_and_put_many"] == (1 if cut_over else 3)
        else:  # one call per item (Bigtable)
            assert spent["check_and_put"] == GROUP + 2 * foreign
    elif cut_over:
        # per crash: the crash row (existence); for the group: the change records and the crash
        # rows' follow-up cells (the Y and the stamp among them).  No clean-up: the deriver
        # takes the queue pointers of crashes this store's collector queued
        assert spent["check_and_put"] == GROUP
        assert spent["mutate_rows"] == 1 + 1
    else:
        # per crash: the crash row (existence), flags:processed N -> Y, and the foreign key form
        # of its pointer in the two queues
        assert spent["check_and_put"] == 2 * GROUP + 2 * foreign
        # the signature pointers and the search feed's change records (two tables), the crash
        # rows' follow-up cells (one call for the group, not one per crash), the N -> Y checks'
        # change stamps (one follow-up call for the group: the stamp lands with the Y, never
        # before it), and the clean-up's two queue tables (the dead-letter flag is emptied with the row)
        assert spent["mutate_rows"] == 2 + 1 + 1 + 2
    assert "increment_many" not in spent or not cut_over
    # each count moved once: both queues are back to empty, and the crashes count as processed
    store.flush_counters()
    sizes = store.queue_sizes()
    assert (sizes["standard"], sizes["legacy"], sizes["processed_legacy"]) == (0, 0, GROUP)


@pytest.mark.parametrize("cut_over", [True, False], ids=["derived", "live"])
def test_own_crashes_are_dequeued_by_their_first_processing_check(store, cut_over):
    """Crashes this store collected, at a time with a fraction (one key form): no pointer check
    at all, one check-and-put a crash where it is atomic, two on Thrift1 (the crash row's
    existence and its N -> Y, sent at once; one on a cut-over store, where nothing counts on
    the N -> Y); the queue counters still move exactly once."""
    if not cut_over:
        counted_live(store)
    store = _inline(store)
    backend = store.backend
    submitted = BASE_TIME.replace(microsecond=123456)
    ids = _queued_crashes(store, GROUP, seed=31, submitted=submitted)
    assert sorted(store.new_crashes(limit=GROUP, queue="legacy")) == sorted(ids)
    _none, spent = _spent(backend, lambda: store.save_processed_crashes([processed(cid) for cid in ids]))
    checks = spent["check_and_put_many"] if "check_and_put_many" in spent else spent["check_and_put"]
    if backend.atomic_check_and_put:
        assert checks == (1 if "check_and_put_many" in spent else GROUP)
    else:
        assert checks == (GROUP if cut_over else 2 * GROUP)
    for cid in ids:  # a second save of each (a retry) checks nothing but its own crash row
        store.save_processed(processed(cid))
    store.flush_counters()
    sizes = store.queue_sizes()
    assert (sizes["standard"], sizes["legacy"], sizes["processed_legacy"]) == (0, 0, GROUP)
    assert not backend.get_rows(K.UNPROCESSED_FLAG, [K.time_index_key(cid, submitted) for cid in ids])
    assert not backend.get_rows(K.LEGACY_UNPROCESSED_FLAG, [K.time_index_key(cid, submitted) for cid in ids])


def test_a_deleted_crash_stays_deleted_on_the_one_check_path(store):
    """The folded first-processing check (atomic backends) and the two-check path (HBase) both
    refuse a crash deleted after its take: nothing of it comes back."""
    from socorro_store.errors import CrashDeleted  # noqa: PLC0415

    ids = _queued_crashes(store, 2, seed=5)
    assert sorted(store.new_crashes(limit=2, queue="legacy")) == sorted(ids)
    store.delete_crashes([ids[0]])
    with pytest.raises(CrashDeleted):
        store.save_processed_crashes([processed(cid) for cid in ids])
    assert store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(ids[0])) == {}
    assert store.get_processing_state(ids[1])["processed"]


def _is_thrift1(backend):
    from socorro_store.backends.hbase import HBaseBackend  # noqa: PLC0415

    return isinstance(backend, HBaseBackend)


@pytest.mark.parametrize("cut_over", [True, False], ids=["derived", "live"])
def test_an_empty_queue_poll_costs_one_call(store, cut_over):
    """Live counters: one read of them, not a scan (two calls on Thrift1).  Derived ones trail
    other processes' saves, so a cut-over store's empty poll is the scan itself."""
    if not cut_over:
        counted_live(store)
    backend = store.backend
    for queue in ("standard", "legacy", "priority"):
        list(store.new_crashes(queue=queue, processor_id="p"))  # the first poll scans
        # the next reads the counters (a backend may first learn the metrics table's families)
        list(store.new_crashes(queue=queue, processor_id="p"))
        taken, spent = _spent(backend, lambda: list(store.new_crashes(queue=queue, processor_id="p")))
        assert taken == []
        if not cut_over:
            assert spent == {"get_rows": 1}
        elif _is_thrift1(backend):
            assert spent == {"scan_open": 1, "scan": 1}  # a short scan: no close
        else:
            assert spent == {"scan": 1}


def test_a_poll_scans_after_this_store_queued_a_crash(store):
    list(store.new_crashes(processor_id="p"))
    ids = _queued_crashes(store, 2, seed=10)
    taken, spent = _spent(store.backend, lambda: list(store.new_crashes(processor_id="p")))
    assert sorted(taken) == sorted(ids)
    assert spent["scan_open" if _is_thrift1(store.backend) else "scan"] >= 1


def _queue_pointer_behind_the_counters(store, seed):
    """A crash queued as Socorro's collector or a store that died before its increment left it:
    crash row and queue pointer, and no counter moved."""
    from socorro_store.backends import RowMutation  # noqa: PLC0415

    cid = crash_id(rng=random.Random(seed))
    other = _queued_crashes(store, 1, seed=seed + 1)[0]  # a real save, to copy its rows
    rows = {table: dict(store.backend.scan(table)) for table in (K.CRASH_REPORTS, K.UNPROCESSED_FLAG)}
    crash_cells = {c: v.replace(other.encode(), cid.encode()) for c, v in rows[K.CRASH_REPORTS][K.crash_row_key(other)].items()}
    store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(cid), crash_cells)])
    pointer = next(row for row in rows[K.UNPROCESSED_FLAG] if other.encode() in row)
    store.backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(pointer.replace(other.encode(), cid.encode()),
                                                               {K.COL_OOID: cid.encode()})])
    return cid, other


def test_counters_that_trail_the_queue_delay_a_crash_until_the_rescan_never_lose_it(store):
    counted_live(store)  # the live counters an empty poll may trust (docs/queue.md)
    cid, other = _queue_pointer_behind_the_counters(store, seed=11)
    assert sorted(store.new_crashes(processor_id="p")) == sorted([cid, other])  # we queued: a scan
    store.release(cid)
    store.save_processed(processed(other))  # the counters say 0: cid was never counted
    assert store.queue_sizes()["standard"] == 0
    assert list(store.new_crashes(processor_id="p")) == []  # trusted: one read, no scan
    store.queue_passes["standard"].empty_polls._scanned_at -= store.queue_passes["standard"].empty_polls.rescan_seconds
    assert list(store.new_crashes(processor_id="p")) == [cid]  # the rescan is due: found


def test_socorros_queue_counter_makes_a_poll_scan(store):
    counted_live(store)  # the live counters an empty poll may trust (docs/queue.md)
    from socorro_store.backends import Increment  # noqa: PLC0415
    from socorro_store.schema.stored import SOCORRO_QUEUE_ROW  # noqa: PLC0415

    cid, other = _queue_pointer_behind_the_counters(store, seed=12)
    assert sorted(store.new_crashes(processor_id="p")) == sorted([cid, other])
    store.release(cid)
    store.save_processed(processed(other))
    assert list(store.new_crashes(processor_id="p")) == []
    # Socorro's collector counts what it queues in its own row: that is enough to scan
    store.backend.increment_many([Increment(K.METRICS, SOCORRO_QUEUE_ROW, K.counter_column("current_unprocessed_size"), 1)])
    assert list(store.new_crashes(processor_id="p")) == [cid]


def test_with_no_rescan_window_every_poll_scans(store):
    from socorro_store.crashstore.store import CrashStore  # noqa: PLC0415

    always = CrashStore(store.backend, queue_rescan_seconds=0)
    list(always.new_crashes(processor_id="p"))
    _taken, spent = _spent(store.backend, lambda: list(always.new_crashes(processor_id="p")))
    assert "get_rows" not in spent and spent["scan_open" if _is_thrift1(store.backend) else "scan"] == 1
    with pytest.raises(InvalidArgument):
        CrashStore(store.backend, queue_rescan_seconds=-1)


def test_a_short_scan_on_thrift1_skips_the_close_but_a_stopped_one_closes(store):
    backend = store.backend
    _queued_crashes(store, 3, seed=8)
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    _rows, spent = _spent(backend, lambda: list(backend.scan(K.CRASH_REPORTS, page_size=10)))
    assert len(_rows) == 3
    _first, stopped = _spent(backend, lambda: next(iter(backend.scan(K.CRASH_REPORTS, page_size=2, limit=1))))
    if _is_thrift1(backend):
        assert spent == {"scan_open": 1, "scan": 1}
        assert stopped["scan_close"] == 1  # left before its end: closed
    else:
        assert "scan_close" not in spent


def test_a_limit_one_take_reads_two_candidates_not_a_page(store):
    backend = store.backend
    ids = _queued_crashes(store, 40, seed=9)
    asked = []
    real_get_rows = backend.get_rows

    def get_rows(table, rows, *args, **kwargs):
        rows = list(rows)
        asked.append((table, len(rows)))
        return real_get_rows(table, rows, *args, **kwargs)

    backend.get_rows = get_rows
    try:
        taken = list(store.new_crashes(limit=1, processor_id="p"))
    finally:
        del backend.get_rows
    assert len(taken) == 1 and taken[0] in ids
    crash_rows = [n for table, n in asked if table == K.CRASH_REPORTS]
    assert crash_rows == [2]  # twice the one crash wanted, not the pass's page of 256


def test_metrics_rows_are_formatted_once_per_minute():
    from datetime import datetime, timedelta, timezone  # noqa: PLC0415

    from socorro_store.crashstore import counters  # noqa: PLC0415

    moment = datetime(2031, 5, 6, 7, 8, tzinfo=timezone.utc)  # a minute no other test uses
    before = K._minute_rows.cache_info()
    for second in range(30):
        incs = counters.metric_increments(moment + timedelta(seconds=second), ["x"])
        assert {inc.row for inc in incs} == {b"2031-05-06T07:08", b"2031-05-06T07", b"2031-05-06", b"2031-05", b"2031"}
    after = K._minute_rows.cache_info()
    assert after.misses - before.misses == 1 and after.hits - before.hits == 29
    assert K.metrics_row(moment.replace(tzinfo=None), "minute") == b"2031-05-06T07:08"  # naive = UTC


def test_thrift1_increments_spread_over_calls_only_where_cells_are_slow(store):
    """HBase's Thrift1 handler applies an incrementRows call's cells one after another: where the
    measured cost per cell makes one call slow, a batch goes out as several calls at once, each
    cell exactly once; where cells are cheap (``serve``), one call."""
    from socorro_store.backends import Increment  # noqa: PLC0415

    backend = store.backend
    if not hasattr(backend, "_increment_cell_s"):
        pytest.skip(f"{type(backend).__name__}: no Thrift1 incrementRows to spread")
    cells = [Increment(K.METRICS, b"spread-%d" % (i % 10), K.counter_column(f"c{i}"), i + 1) for i in range(80)]
    for per_cell_s, want in ((0.0, 1), (0.004, min(backend.max_increment_calls, 10))):
        backend._increment_cell_s = per_cell_s
        _none, spent = _spent(backend, lambda: backend.increment_many(cells))
        assert spent["increment_many"] == want
    rows = backend.get_rows(K.METRICS, [b"spread-%d" % r for r in range(10)])
    assert {col: K.decode_counter(v) for cells_ in rows.values() for col, v in cells_.items()} == \
        {K.counter_column(f"c{i}"): 2 * (i + 1) for i in range(80)}


def test_a_failed_scan_proves_nothing_the_next_poll_scans(store):
    """Issue 32, defect 9: a poll whose scan failed must not count as a scan, else a crash this
    store queued waits a whole rescan interval behind counters that say empty."""
    from socorro_store.errors import BackendUnavailable  # noqa: PLC0415

    cid, other = _queue_pointer_behind_the_counters(store, seed=41)  # this store queued (other)
    store.save_processed(processed(other))  # the counters now say 0; cid's pointer is there
    real_scan = store.backend.scan

    def failing_scan(*args, **kwargs):
        raise BackendUnavailable("the scan failed")

    store.backend.scan = failing_scan
    try:
        with pytest.raises(BackendUnavailable):
            list(store.new_crashes(processor_id="p"))
    finally:
        store.backend.scan = real_scan
    assert list(store.new_crashes(processor_id="p")) == [cid]  # scanned again, not trusted
