"""The processing queues: order across salts, claims, leases, legacy/priority, concurrency."""

import random
import threading
import time
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_helpers import BASE_TIME, claim_history, counted_live, crash_id, processed, queue_table_left, raw_crash

from socorro_store import BackendUnavailable, InvalidArgument, open_store
from socorro_store.backends import RowMutation
from socorro_store.crashstore import queue
from socorro_store.jobs.scrutiny import reconcile_queue
from socorro_store.schema import keys as K
from socorro_store.schema import queue_keys as QK


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    """One embedded store for the property test (each example uses its own day)."""
    with open_store(f"embedded://{tmp_path_factory.mktemp('queue') / 'store'}") as opened:
        opened.create_tables()
        yield opened


_day = iter(range(10**6))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(K.SALTS), st.integers(0, 86_399_999)), min_size=1, max_size=40),
       st.randoms(use_true_random=False))
def test_queue_and_time_index_come_out_in_submission_order(shared_store, crashes, rng):
    store = shared_store
    store.save_processed_crashes([processed(c) for c in store.new_crashes()])  # a failed example's leftovers
    day = BASE_TIME + timedelta(days=next(_day))
    items = []
    for salt, ms in crashes:
        cid = crash_id(salt, day, random.Random(next(_day)))  # unique ids, whatever hypothesis draws
        items.append((day + timedelta(milliseconds=ms), cid))
    shuffled = items[:]
    rng.shuffle(shuffled)
    store.save_raw_crashes([(raw_crash(c, t), {}, c) for t, c in shuffled])
    expected = [c for t, c in sorted(items, key=lambda item: (K.format_timestamp(item[0]), item[1]))]
    assert list(store.crashes_submitted(day, day + timedelta(days=1))) == expected
    table, prefix = queue.queue_table("standard")
    one_scan = [row for row, _cells in queue.queue_rows(store.backend, table, prefix)]
    assert one_scan == [row for row, _cells in queue.merged_scan(store.backend, table, prefix, page_size=3)]
    taken = list(store.new_crashes(processor_id="prop"))
    assert taken == expected
    store.save_processed_crashes([processed(c) for c in taken])
    assert list(store.new_crashes()) == []


def test_a_short_queue_is_read_with_one_scan_and_a_long_one_by_merging(store):
    ids = [crash_id(salt, BASE_TIME, random.Random(i)) for i, salt in enumerate(K.SALTS * 2)]
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i)), {}, c) for i, c in enumerate(ids)])
    table, prefix = queue.queue_table("standard")
    # a foreign row between the "9" and "a" buckets: inside the one-scan range, in no bucket
    store.backend.mutate_rows(table, [RowMutation(b":foreign", {K.COL_OOID: ids[0].encode()})])

    def scanners_opened(page_size):
        kind = "scan_open" if "scan_open" in store.backend.calls else "scan"
        before = store.backend.calls[kind]
        rows = [row for row, _cells in queue.queue_rows(store.backend, table, prefix, page_size=page_size)]
        assert [K.parse_time_index_key(row)[0] for row in rows] == ids
        return store.backend.calls[kind] - before

    assert scanners_opened(page_size=3) == 1  # 33 rows fit in 16 pages of 3
    assert scanners_opened(page_size=1) >= 1 + len(K.SALTS)  # they do not fit in 16 pages of 1


def test_claims_are_exclusive_and_processing_removes_pointers(store):
    cids = [crash_id(s) for s in "0f3"]
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i)), {}, c) for i, c in enumerate(cids)])
    first = list(store.new_crashes(limit=2, processor_id="p1"))
    assert first == cids[:2]
    assert list(store.new_crashes(processor_id="p2")) == cids[2:]
    assert list(store.new_crashes(processor_id="p3")) == []
    state = store.get_processing_state(cids[0])
    assert state["claim"]["processor"] == "p1" and state["queues"] == ["standard"]
    # each claim is in the history of the crash's own queue row, in the minute's claim row
    for i, cid in enumerate(cids):
        history = claim_history(store.backend, K.time_index_key(cid, BASE_TIME + timedelta(seconds=i)))
        assert [c["processor"] for c in history] == ["p1", "p1", "p2"][i:i + 1]
    assert len({QK.claim_row_key(K.time_index_key(c, BASE_TIME)) for c in cids}) == 1
    store.save_processed_crashes([processed(c) for c in cids])
    # out of the queue at once, whether its pointer went with the save or waits for the deriver
    assert list(store.new_crashes(processor_id="p4")) == []
    state = store.get_processing_state(cids[0])
    assert state["queues"] == [] and state["claim"] is None
    store.settle()
    assert queue_table_left(store.backend) == ([], True)  # pointers gone, their histories done
    assert store.queue_sizes()["standard"] == 0


def test_expired_lease_comes_back(store):
    cid = crash_id("a")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    # A lease long enough that the next call surely sees it live, even on a slow backend.
    assert list(store.new_crashes(processor_id="dies", lease_seconds=1.5)) == [cid]
    assert list(store.new_crashes(processor_id="other")) == []  # lease still live
    time.sleep(1.6)
    assert list(store.new_crashes(processor_id="other")) == [cid]
    assert store.get_processing_state(cid)["claim"]["processor"] == "other"


def test_legacy_and_priority_queues(store):
    accepted, deferred = crash_id("1"), crash_id("2")
    store.save_raw_crashes([(raw_crash(accepted, legacy_processing=0), {}, accepted),
                            (raw_crash(deferred, BASE_TIME + timedelta(seconds=1), legacy_processing=1), {}, deferred)])
    assert store.queue_sizes()["legacy"] == 1
    assert list(store.new_crashes(queue="legacy")) == [accepted]
    assert list(store.new_crashes(queue="priority")) == []
    assert store.enqueue_priority([deferred, deferred]) == 1
    assert store.enqueue_priority([deferred]) == 0  # already pending
    assert store.queue_sizes()["priority"] == 1
    assert store.get_processing_state(deferred)["priority_processing"] is True
    assert list(store.new_crashes(queue="priority", processor_id="fast")) == [deferred]
    store.save_processed_crashes([processed(accepted), processed(deferred)])
    sizes = store.queue_sizes()
    assert sizes == {"standard": 0, "legacy": 0, "priority": 0, "processed_legacy": 1, "processed_priority": 1}
    assert list(store.new_crashes(queue="standard")) == []


def test_queue_argument_validation(store):
    for kwargs in ({"queue": "urgent"}, {"limit": -1}, {"lease_seconds": 0}, {"processor_id": ""}):
        with pytest.raises(InvalidArgument):
            store.new_crashes(**kwargs)
    with pytest.raises(Exception):
        store.enqueue_priority([crash_id("3")])  # unknown crash


def test_four_processors_drain_exactly_once(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        rng = random.Random(4)
        cids = [crash_id(rng.choice(K.SALTS), rng=rng) for _ in range(400)]
        store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(milliseconds=i)), {}, c)
                                for i, c in enumerate(cids)])
        taken, lock = Counter(), threading.Lock()

        def processor(name):
            while True:
                batch = list(store.new_crashes(limit=20, processor_id=name))
                if not batch:
                    return
                store.save_processed_crashes([processed(c) for c in batch])
                with lock:
                    taken.update(batch)

        threads = [threading.Thread(target=processor, args=(f"p{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(taken) == set(cids) and set(taken.values()) == {1}
        assert store.queue_sizes()["standard"] == 0
        metrics = store.get_metrics("crash_report_queues")
        assert metrics["inserts_unprocessed"] == metrics["deletes_unprocessed"] == 400


def test_killed_processor_claims_return_after_lease(embedded_url):
    """A processor that claims a batch and dies: another one gets the whole batch after the lease."""
    with open_store(embedded_url) as store:
        store.create_tables()
        cids = [crash_id(s) for s in "02468ace"]
        store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i)), {}, c) for i, c in enumerate(cids)])
        claimed = store.new_crashes(limit=5, processor_id="doomed", lease_seconds=1.0)
        held = [next(claimed), next(claimed), next(claimed)]  # dies mid-batch
        assert held == cids[:3]
        # The batch of 5 was claimed as a group: the 2 it never yielded are held too.
        survivor = list(store.new_crashes(processor_id="survivor"))
        assert survivor == cids[5:]
        time.sleep(1.1)
        assert list(store.new_crashes(processor_id="survivor")) == cids[:5]


def _fail_queue_writes(store, monkeypatch):
    """Make every ``mutate_tables`` writing the standard queue table fail (a lost connection);
    returns what restores it."""
    real = store.backend.mutate_tables

    def failing(mutations, *args, **kwargs):
        if mutations.get(K.UNPROCESSED_FLAG):
            raise BackendUnavailable("injected: connection lost before the queue delete")
        return real(mutations, *args, **kwargs)

    monkeypatch.setattr(store.backend, "mutate_tables", failing)
    return lambda: monkeypatch.setattr(store.backend, "mutate_tables", real)


@pytest.mark.parametrize("cut_over", [True, False], ids=["derived", "live"])
def test_a_failed_queue_delete_is_redone_and_leaves_no_pointer(embedded_url, monkeypatch, cut_over):
    """The crash row was written but the queue delete failed: it must still be dequeued.  Live,
    the save's clean-up failed and the caller's retry dequeues; on a cut-over store the clean-up
    is the deriver's, whose failed batch is applied again from its journal."""
    with open_store(embedded_url) as store:
        store.create_tables()
        if not cut_over:
            counted_live(store)
        cid = crash_id("a")
        store.save_raw_crash(raw_crash(cid), {}, cid)
        assert list(store.new_crashes(processor_id="p")) == [cid]
        restore = _fail_queue_writes(store, monkeypatch)
        with pytest.raises(BackendUnavailable):
            store.save_processed(processed(cid))
            store.settle()  # on a cut-over store the save succeeds and derivation fails
        restore()
        assert store.get_processing_state(cid)["processed"]
        assert list(store.new_crashes(processor_id="q")) == []  # its pointer is left, its crash skipped
        if not cut_over:
            store.save_processed(processed(cid))  # the caller's retry
        store.settle()
        assert queue_table_left(store.backend) == ([], True)
        # The failed attempt sent its counters before the queue clean-up (issue 21, defect 10):
        # the size is exact without reconcile-queue, and reconcile-queue finds nothing to fix.
        assert store.queue_sizes()["standard"] == 0
        assert reconcile_queue(store.backend)["corrected"] == 0
        time.sleep(0.01)
        assert list(store.new_crashes(processor_id="q", lease_seconds=0.001)) == []


def test_a_processed_crash_s_leftover_pointer_goes_with_the_next_take_once_its_lease_ended(embedded_url, monkeypatch):
    """A save whose clean-up failed and was never retried (its processor died) leaves the
    crash's pointer: a take finds it free and the crash processed, and deletes it instead of
    handing the crash out again."""
    with open_store(embedded_url) as store:
        store.create_tables()
        counted_live(store)
        cid = crash_id("c")
        store.save_raw_crash(raw_crash(cid, legacy_processing=1), {}, cid)
        assert list(store.new_crashes(processor_id="p", lease_seconds=0.05)) == [cid]
        restore = _fail_queue_writes(store, monkeypatch)
        with pytest.raises(BackendUnavailable):
            store.save_processed(processed(cid))  # the processor dies before its clean-up
        restore()
        assert queue_table_left(store.backend)[0] == [K.time_index_key(cid, BASE_TIME)]
        time.sleep(0.1)  # the lease ends
        with open_store(embedded_url) as other:  # its first poll scans (live counters say empty)
            assert list(other.new_crashes(processor_id="q")) == []
        assert queue_table_left(store.backend)[0] == []
        assert store.queue_sizes()["standard"] == 0


def test_concurrent_priority_requests_queue_a_crash_once(embedded_url, monkeypatch):
    from socorro_store.crashstore import crashes as crash_module

    with open_store(embedded_url) as store:
        store.create_tables()
        cid = crash_id("c")
        store.save_raw_crash(raw_crash(cid), {}, cid)
        store.save_processed(processed(cid))
        results = []
        barrier = threading.Barrier(4)
        read_states = crash_module.read_states

        def read_then_wait(backend, crash_ids):
            states = read_states(backend, crash_ids)
            barrier.wait()  # every request has seen "no pending request" before any writes
            return states

        monkeypatch.setattr(crash_module, "read_states", read_then_wait)

        def request():  # racing stores (one store serialises its requests: group commit)
            results.append(crash_module.enqueue_priority(store.backend, [cid], datetime.now(timezone.utc),
                                                         store.live_counters))

        threads = [threading.Thread(target=request) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        monkeypatch.undo()
        assert sum(results) == 1
        assert len(list(store.backend.scan(K.UNPROCESSED_FLAG, prefix=K.PRIORITY_PREFIX))) == 1
        assert store.queue_sizes()["priority"] == 1
        assert list(store.new_crashes(queue="priority")) == [cid]
        store.save_processed(processed(cid))
        assert store.queue_sizes()["priority"] == 0
        assert list(store.backend.scan(K.UNPROCESSED_FLAG, prefix=K.PRIORITY_PREFIX)) == []


def _claim(processor, claimed, expires):
    return {"processor": processor, "claimed": claimed, "expires": expires}


def test_claim_history_owner_is_the_first_claim_or_a_takeover_after_expiry():
    assert queue.owner_of([]) is None
    first, racer = _claim("a", 100, 200), _claim("b", 150, 250)
    assert queue.owner_of([first, racer]) == 0                       # b claimed during a's lease
    late, later = _claim("c", 200, 300), _claim("d", 250, 350)
    assert queue.owner_of([first, racer, late]) == 2                 # c came when a's lease ended
    assert queue.owner_of([first, racer, late, later]) == 2          # d raced c and lost
    assert queue.owner_of([first, late, _claim("e", 300, 400)]) == 2  # and so on after c's lease
    assert queue.live_claim([first], now_ms=199) == first and queue.live_claim([first], now_ms=200) is None
    raw = b"".join(queue.encode_claim(c["processor"], c["claimed"], c["expires"]) for c in (first, late))
    assert queue.decode_claims(raw) == [first, late]
    assert queue.decode_claims(b"\xc1garbage") == [] and queue.decode_claims(b"") == []


def test_a_crash_in_two_queues_is_claimed_once(store):
    cid = crash_id("5")
    store.save_raw_crash(raw_crash(cid, legacy_processing=0), {}, cid)
    assert list(store.new_crashes(queue="legacy", processor_id="old")) == [cid]
    assert list(store.new_crashes(queue="standard", processor_id="new")) == []
    assert store.get_processing_state(cid)["queues"] == ["legacy", "standard"]


def test_a_crash_processed_after_the_scan_is_not_claimed_again(store):
    """The race the claims must survive: a slow processor's scan read a queue row, then the crash
    was claimed, processed and its row deleted before the slow one appended its claim."""
    cid = crash_id("7")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    slow = queue.Taker(store.backend, "slow", 60_000, 3, queue.HeldClaims())
    stale = list(queue.candidates(store.backend, "standard", 16))
    assert [crash for _row, crash, _state in stale] == [cid]
    assert list(store.new_crashes(processor_id="fast")) == [cid]
    store.save_processed(processed(cid))
    assert queue.claim_groups(store.backend, "standard", [(slow, stale)]) == [(slow, [])]
    store.settle()  # (on a cut-over store the deriver takes the pointer)
    assert queue_table_left(store.backend) == ([], True)  # its append landed on a done history


def test_a_take_costs_four_calls_whatever_the_group_size(store):
    """Scan, read the claims, read the crash rows, one Append per claim row: 40 crashes submitted
    within one minute share one claim row, so they are claimed with one Append on every backend
    (Thrift1 and Bigtable have no multi-row Append)."""
    ids = [crash_id(K.SALTS[i % 16], BASE_TIME, random.Random(i)) for i in range(40)]
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i)), {}, c) for i, c in enumerate(ids)])
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    before = dict(store.backend.calls)
    assert list(store.new_crashes(limit=40, processor_id="p")) == ids
    spent = {kind: n - before.get(kind, 0) for kind, n in store.backend.calls.items() if n != before.get(kind, 0)}
    scanning = sum(n for kind, n in spent.items() if kind.startswith("scan"))
    assert spent.pop("get_rows") == 2 and scanning <= 3  # one scanner (open, page, close on Thrift1)
    assert spent.pop("append_many", 0) + spent.pop("append", 0) == 1
    assert set(spent) <= {"scan", "scan_open", "scan_close"}
    # a group spread over two minutes: one Append per minute
    later = [crash_id(K.SALTS[i % 16], BASE_TIME, random.Random(100 + i)) for i in range(4)]
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=50 + 5 * i)), {}, c)
                            for i, c in enumerate(later)])
    before = dict(store.backend.calls)
    assert list(store.new_crashes(limit=4, processor_id="p")) == later
    appends = sum(n - before.get(kind, 0) for kind, n in store.backend.calls.items() if kind.startswith("append"))
    assert appends == (1 if "append_many" in store.backend.calls else 2)


def test_saving_a_taken_crash_reads_no_crash_row(store, monkeypatch):
    """The take read the crash rows' state: the save uses it instead of reading them again."""
    ids = [crash_id(s) for s in "0a"]
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i)), {}, c) for i, c in enumerate(ids)])
    taken = list(store.new_crashes(processor_id="p"))
    read, real = [], store.backend.get_rows
    monkeypatch.setattr(store.backend, "get_rows", lambda table, rows, *a, **k: read.append(table) or real(table, rows, *a, **k))
    store.save_processed_crashes([processed(c) for c in taken])
    assert K.CRASH_REPORTS not in read and len(store.held_claims) == 0
    other = crash_id("b")  # not taken through this store: its state is read
    store.save_raw_crash(raw_crash(other), {}, other)
    before = read.count(K.CRASH_REPORTS)  # (the raw save checked whether the crash was stored)
    store.save_processed(processed(other))
    assert read.count(K.CRASH_REPORTS) - before == 1
    store.settle()
    assert queue_table_left(store.backend) == ([], True)


def test_a_take_passes_over_the_crashes_its_store_holds_unread(store, monkeypatch):
    """Crashes this store holds (another of its iterators took them) are at the head of the
    queue: a later take of the store skips their pointers without reading their claims or
    crash rows, which would only say they are held."""
    ids = [crash_id(s) for s in "0123ab"]
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i)), {}, c) for i, c in enumerate(ids)])
    assert list(store.new_crashes(limit=3, processor_id="p")) == ids[:3]  # held, unsaved
    read, real = [], store.backend.get_rows
    monkeypatch.setattr(store.backend, "get_rows", lambda table, rows, *a, **k: read.append((table, list(rows)))
                        or real(table, rows, *a, **k))
    assert list(store.new_crashes(processor_id="q")) == ids[3:]
    crash_rows = {row for table, rows in read if table == K.CRASH_REPORTS for row in rows}
    assert crash_rows == {K.crash_row_key(c) for c in ids[3:]}
