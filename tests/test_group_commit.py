"""Group commit: concurrent one-crash calls share backend calls, and each caller gets its own result."""

import threading
import time
import uuid
import zlib
from collections import Counter
from datetime import timedelta

import pytest
from faults.faultproxy import FaultProxy
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import CrashConflict, CrashIDNotFound, InvalidArgument, open_store
from socorro_store.crashstore.group_commit import GroupCommit, GroupLanes
from socorro_store.errors import BackendUnavailable
from socorro_store.schema import keys as K

THREADS = 16
PER_THREAD = 12


def _run_threads(work, action):
    """Run ``action(item)`` for each item of each list of ``work`` in its own thread; the outcomes."""
    outcomes = {}

    def run(items):
        for item in items:
            try:
                outcomes[item] = ("ok", action(item))
            except Exception as exc:  # noqa: BLE001 - each caller's own outcome is the point
                outcomes[item] = ("error", exc)

    threads = [threading.Thread(target=run, args=(items,)) for items in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def _calls(store):
    return sum(store.backend.calls.values())


def test_concurrent_one_crash_saves_share_calls_and_store_each_crash_once(store):
    ids = [[crash_id(K.SALTS[(t + i) % 16]) for i in range(PER_THREAD)] for t in range(THREADS)]
    every = [cid for chunk in ids for cid in chunk]
    times = {cid: BASE_TIME + timedelta(seconds=n) for n, cid in enumerate(every)}
    dumps = {"upload_file_minidump": bytes(range(256)) * 256}  # 64 KiB: real ones are ~500 KB
    lone = crash_id("0")  # what one crash costs alone (5 calls; more on Bigtable), for comparison
    # each phase's counters included (sent in the background on a remote backend)
    store.flush_counters()
    before = _calls(store)
    store.save_raw_crash(raw_crash(lone, BASE_TIME), dumps, lone)
    store.flush_counters()
    lone_calls = _calls(store) - before
    before = _calls(store)
    outcomes = _run_threads(ids, lambda cid: store.save_raw_crash(raw_crash(cid, times[cid]), dumps, cid))
    assert Counter(kind for kind, _ in outcomes.values()) == {"ok": len(every)}
    store.flush_counters()
    raw_calls = _calls(store) - before
    assert raw_calls < lone_calls * len(every) / 3, store.backend.calls
    assert store.raw_groups.items == len(every) + 1 and store.raw_groups.groups < len(every) / 3
    every.append(lone)

    listed = list(store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(hours=1)))
    assert sorted(listed) == sorted(every) and len(listed) == len(set(listed))
    assert store.queue_sizes()["standard"] == len(every)
    assert store.get_metrics("2016-09-18")["submitted_crash_reports"] == len(every)

    lone = every.pop()  # the lone crash again: what one processed crash costs alone
    store.flush_counters()
    before = _calls(store)
    store.save_processed(processed(lone, signature=f"sig{lone[0]}"))
    store.flush_counters()
    lone_calls = _calls(store) - before
    before = _calls(store)
    outcomes = _run_threads(ids, lambda cid: store.save_processed(processed(cid, signature=f"sig{cid[0]}")))
    assert Counter(kind for kind, _ in outcomes.values()) == {"ok": len(every)}
    store.flush_counters()
    assert _calls(store) - before < lone_calls * len(every) / 3, store.backend.calls
    assert store.processed_groups.groups < len(every) / 3
    every.append(lone)
    assert store.queue_sizes()["standard"] == 0
    assert list(store.new_crashes()) == []
    by_salt = Counter(cid[0] for cid in every)
    for salt, n in by_salt.items():
        assert store.get_signature_counters(f"sig{salt}")["daily_2016-09-18"] == n
        assert sorted(store.crashes_by_signature(f"sig{salt}")) == sorted(c for c in every if c[0] == salt)


def _gate(group_commit):
    """Hold ``group_commit``'s writes until the returned event is set; the real writer then runs."""
    release, write = threading.Event(), group_commit._write_group

    def gated(items):
        release.wait()
        return write(items)

    group_commit._write_group = gated
    return release


def _wait_queued(group_commit, n):
    """Block until ``n`` callers wait behind the write in flight (synchronisation, not timing)."""
    while group_commit.queued < n:
        time.sleep(0.005)


def _grouped(group_commit, first, others):
    """Run ``first`` as the leader (held at the gate) and ``others`` queued behind it, so that
    ``others`` are written as one group.  ``{name: ("ok", value) | ("error", exc)}``.  A store's
    :class:`GroupLanes` has one lane by default: every item joins that lane's group."""
    if isinstance(group_commit, GroupLanes):
        (group_commit,) = group_commit.lanes
    release = _gate(group_commit)
    outcomes = {}

    def call(name, action):
        try:
            outcomes[name] = ("ok", action())
        except Exception as exc:  # noqa: BLE001
            outcomes[name] = ("error", exc)

    leader = threading.Thread(target=call, args=first)
    leader.start()
    while not group_commit.busy:
        time.sleep(0.005)
    followers = [threading.Thread(target=call, args=item) for item in others]
    for thread in followers:
        thread.start()
    _wait_queued(group_commit, len(others))
    groups_before = group_commit.groups
    release.set()
    for thread in [leader, *followers]:
        thread.join()
    assert group_commit.groups - groups_before == 2  # the leader's, then every follower together
    return outcomes


def test_a_failing_processed_crash_fails_alone_in_its_group(store):
    a, b, c, unknown = (crash_id(s) for s in "abce")
    store.save_raw_crashes([(raw_crash(x), {}, x) for x in (a, b, c)])
    outcomes = _grouped(store.processed_groups, ("a", lambda: store.save_processed(processed(a))), [
        ("b", lambda: store.save_processed(processed(b, signature="B"))),
        ("unknown", lambda: store.save_processed(processed(unknown))),
        ("c", lambda: store.save_processed(processed(c, signature="C"))),
        ("b again", lambda: store.save_processed(processed(b, signature="B"))),
    ])
    assert outcomes["unknown"][0] == "error" and isinstance(outcomes["unknown"][1], CrashIDNotFound)
    assert unknown in str(outcomes["unknown"][1])
    assert {name: kind for name, (kind, _) in outcomes.items() if name != "unknown"} == {
        "a": "ok", "b": "ok", "c": "ok", "b again": "ok"}
    for cid in (a, b, c):
        assert store.get_processing_state(cid)["processed"] is True
    assert store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(unknown)) == {}
    assert store.get_signature_counters("B")["daily_2016-09-18"] == 1  # saved twice, counted once
    assert store.queue_sizes()["standard"] == 0


def test_a_conflicting_raw_crash_fails_alone_in_its_group(store):
    a, b, c, taken = (crash_id(s) for s in "abcf")
    store.save_raw_crash(raw_crash(taken), {"upload_file_minidump": b"first"}, taken)
    before = store.get_metrics("2016-09-18")["submitted_crash_reports"]
    outcomes = _grouped(store.raw_groups, ("a", lambda: store.save_raw_crash(raw_crash(a), {}, a)), [
        ("b", lambda: store.save_raw_crash(raw_crash(b), {}, b)),
        ("taken", lambda: store.save_raw_crash(raw_crash(taken), {"upload_file_minidump": b"other"}, taken)),
        ("retry", lambda: store.save_raw_crash(raw_crash(taken), {"upload_file_minidump": b"first"}, taken)),
        ("c", lambda: store.save_raw_crash(raw_crash(c), {}, c)),
    ])
    assert outcomes["taken"][0] == "error" and isinstance(outcomes["taken"][1], CrashConflict)
    assert {name: kind for name, (kind, _) in outcomes.items()} == {
        "a": "ok", "b": "ok", "taken": "error", "retry": "ok", "c": "ok"}
    assert store.get_raw_dump(taken) == b"first"
    assert store.get_metrics("2016-09-18")["submitted_crash_reports"] == before + 3
    assert sorted(store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(hours=1))) == sorted([a, b, c, taken])


def test_bad_input_fails_in_the_callers_thread_before_joining_a_group(store):
    cid = crash_id("d")
    groups = store.raw_groups.groups
    with pytest.raises(InvalidArgument):
        store.save_raw_crash(raw_crash(cid), {"bad name": b""}, cid)
    with pytest.raises(InvalidArgument):
        store.enqueue_priority(None)
    assert store.raw_groups.groups == groups and store.priority_groups.groups == 0
    assert all_rows(store.backend) == {}


def test_priority_requests_in_one_group_each_get_their_own_count(store):
    a, b, c, unknown = (crash_id(s) for s in "1234")
    store.save_raw_crashes([(raw_crash(x), {}, x) for x in (a, b, c)])
    store.enqueue_priority([c])
    outcomes = _grouped(store.priority_groups, ("first", lambda: store.enqueue_priority([a])), [
        ("both", lambda: store.enqueue_priority([a, b])),
        ("b again", lambda: store.enqueue_priority([b])),
        ("with unknown", lambda: store.enqueue_priority([b, unknown])),
        ("already queued", lambda: store.enqueue_priority([c])),
    ])
    assert outcomes["with unknown"][0] == "error" and isinstance(outcomes["with unknown"][1], CrashIDNotFound)
    assert {name: value for name, (kind, value) in outcomes.items() if kind == "ok"} == {
        "first": 1, "both": 1, "b again": 0, "already queued": 0}
    assert store.queue_sizes()["priority"] == 3
    assert sorted(store.new_crashes(queue="priority")) == sorted([a, b, c])


@pytest.fixture
def proxied_store(gateway_buffered_binary):
    """A store reaching the gateway through a :class:`FaultProxy` (no retries), and the proxy."""
    proxy = FaultProxy(("127.0.0.1", gateway_buffered_binary.port)).start()
    prefix = "g" + uuid.uuid4().hex[:10]
    with open_store(f"hbase://127.0.0.1:{proxy.port}?table_prefix={prefix}&timeout_ms=2000&retries=0") as opened:
        opened.create_tables()
        yield opened, proxy
    proxy.stop()


def test_a_backend_failure_fails_every_caller_of_the_group(proxied_store):
    store, proxy = proxied_store
    a, b, c, d = (crash_id(s) for s in "5678")
    store.save_raw_crash(raw_crash(a), {}, a)
    store.flush_counters()  # no background send of a's counters among the calls the proxy counts
    # The leader's group (a retry of a: two reads, no write) goes through; the next group's
    # first call is cut.
    proxy.inject("drop_before", count=1, after=2)
    outcomes = _grouped(store.raw_groups, ("first", lambda: store.save_raw_crash(raw_crash(a), {}, a)), [
        (name, lambda cid=cid: store.save_raw_crash(raw_crash(cid), {}, cid)) for name, cid in
        (("b", b), ("c", c), ("d", d))])
    assert outcomes["first"] == ("ok", None)
    for name in "bcd":
        kind, error = outcomes[name]
        assert kind == "error" and isinstance(error, BackendUnavailable), outcomes[name]
    for cid in (b, c, d):
        assert store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(cid)) == {}
    store.save_raw_crash(raw_crash(b), {}, b)  # the caller's retry succeeds
    assert sorted(store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(hours=1))) == sorted([a, b])


def test_lone_caller_is_written_at_once_and_groups_stay_bounded(store):
    group_commit = GroupCommit(lambda items: [len(items)] * len(items), max_items=3, max_bytes=100)
    assert group_commit.submit("x", 10) == 1 and not group_commit.busy
    with pytest.raises(InvalidArgument):
        GroupCommit(lambda items: items, max_items=0)
    release = _gate(group_commit)
    sizes = {}
    threads = [threading.Thread(target=lambda i=i: sizes.__setitem__(i, group_commit.submit(i, 40)))
               for i in range(8)]
    threads[0].start()
    while not group_commit.busy:
        time.sleep(0.005)
    for thread in threads[1:]:
        thread.start()
    _wait_queued(group_commit, 7)
    release.set()
    for thread in threads:
        thread.join()
    # 7 queued items of 40 bytes, at most 100 bytes per group: groups of 2, 2, 2, 1
    assert sizes[0] == 1 and sorted(sizes[i] for i in range(1, 8)) == [1, 2, 2, 2, 2, 2, 2]
    assert group_commit.groups == 1 + 1 + 4


def _lane_of(key, lanes):
    return zlib.crc32(key.encode()) % lanes


def test_lanes_write_groups_of_different_keys_at_once():
    both_in_flight = threading.Barrier(2, timeout=30)

    def write(items):
        if any(n == 0 for _key, n in items):
            both_in_flight.wait()  # each lane's group waits for the other lane's: both in flight
        return [None] * len(items)

    lanes = GroupLanes(write, lanes=2, key=lambda item: item[0])
    keys = ["a", "b", "c", "d", "e", "f"]
    first, second = next(k for k in keys if _lane_of(k, 2) == 0), next(k for k in keys if _lane_of(k, 2) == 1)
    outcomes = _run_threads([[(first, 0)], [(second, 0)]], lambda item: lanes.submit(item))
    assert Counter(kind for kind, _ in outcomes.values()) == {"ok": 2}  # the barrier passed: 2 in flight
    assert lanes.groups == 2 and not lanes.busy and lanes.queued == 0
    outcomes = _run_threads([[(key, n) for n in range(1, 6)] for key in (first, second)], lambda item: lanes.submit(item))
    assert all(kind == "ok" for kind, _ in outcomes.values()) and lanes.items == 12


def test_one_crashs_items_share_a_lane_so_they_are_never_written_at_once():
    seen, lock = [], threading.Lock()
    active = set()

    def write(items):
        keys = {key for key, _ in items}
        with lock:
            assert not keys & active, "two groups of one key in flight"
            active.update(keys)
        time.sleep(0.001)  # widen the window a second lane would use (not a timing assertion)
        with lock:
            active.difference_update(keys)
            seen.extend(items)
        return [None] * len(items)

    lanes = GroupLanes(write, lanes=4, key=lambda item: item[0])
    work = [[(f"crash{t % 3}", i) for i in range(20)] for t in range(9)]
    outcomes = _run_threads(work, lambda item: lanes.submit(item))
    assert all(kind == "ok" for kind, _ in outcomes.values()) and len(seen) == 9 * 20


def test_lanes_are_validated():
    for bad in (0, 65, 1.5, "2", True):
        with pytest.raises(InvalidArgument):
            GroupLanes(lambda items: items, lanes=bad, key=str)
    with pytest.raises(InvalidArgument):
        GroupLanes(lambda items: items, lanes=2)


def test_a_store_with_lanes_stores_and_counts_each_crash_once(backend_url, prebuilt_tables):
    with open_store(backend_url, group_lanes=4) as store:
        store.create_tables()
        ids = [crash_id(K.SALTS[i % 16]) for i in range(24)]
        times = {cid: BASE_TIME + timedelta(seconds=n) for n, cid in enumerate(ids)}
        twice = [[cid for cid in ids[t::6]] for t in range(6)] * 2  # every crash saved by two threads
        outcomes = _run_threads(twice, lambda cid: store.save_raw_crash(raw_crash(cid, times[cid]), {}, cid))
        assert all(kind == "ok" for kind, _ in outcomes.values())
        assert len(store.raw_groups.lanes) == 4 and store.raw_groups.items == 48
        assert sorted(store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(hours=1))) == sorted(ids)
        assert store.queue_sizes()["standard"] == 24
        outcomes = _run_threads(twice, lambda cid: store.save_processed(processed(cid, signature="laned")))
        assert all(kind == "ok" for kind, _ in outcomes.values())
        assert store.queue_sizes()["standard"] == 0 and list(store.new_crashes()) == []
        assert store.get_metrics("2016-09-18")["submitted_crash_reports"] == 24
        assert store.get_signature_counters("laned")["daily_2016-09-18"] == 24
