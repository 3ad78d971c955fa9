"""Claims in per-minute claim rows: bounded cost, shared passes, owned yields, renewal, release,
dead letters, expiry of done histories."""

import collections
import random
import sqlite3
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from store_helpers import BASE_TIME, claim_history, crash_id, processed, queue_table_left, raw_crash

from socorro_store import InvalidArgument, open_store
from socorro_store.demo import synthetic_crashes
from socorro_store.schema import keys as K
from socorro_store.schema import queue_keys as QK


def _lifecycle(store, seed, n, batch=200, minutes=None):
    """Save ``n`` crashes, take them all and save them processed, ``batch`` at a time (counting
    the crashes submitted in each minute into ``minutes``)."""
    data = synthetic_crashes(n, date(2016, 9, 18), seed=seed, dump_kb=0, signatures=5)
    _count_minutes(data, minutes)
    planned = {cid: sig for _r, _d, cid, sig in data}
    for i in range(0, n, batch):
        store.save_raw_crashes([(raw, dumps, cid) for raw, dumps, cid, _sig in data[i:i + batch]])
        taken = list(store.new_crashes(limit=batch, processor_id="bulk"))
        store.save_processed_crashes([{"uuid": c, "signature": planned[c], "success": True,
                                       "completeddatetime": datetime.now(timezone.utc).isoformat()}
                                      for c in taken])


def _count_minutes(data, minutes):
    if minutes is not None:
        minutes.update(raw["submitted_timestamp"][:16] for raw, _d, _c, _s in data)


def _probe(store, seed, minutes=None):
    """Calls spent by a take of 16 crashes (then processed)."""
    data = synthetic_crashes(16, date(2016, 9, 18), seed=seed, dump_kb=0, signatures=5)
    _count_minutes(data, minutes)
    store.save_raw_crashes([(raw, dumps, cid) for raw, dumps, cid, _sig in data])
    store.flush_counters()  # the saves' counters (sent in the background on a remote backend) first
    before = sum(store.backend.calls.values())
    taken = list(store.new_crashes(limit=16, processor_id="probe"))
    spent = sum(store.backend.calls.values()) - before
    assert sorted(taken) == sorted(cid for _r, _d, cid, _s in data)
    store.save_processed_crashes([processed(c) for c in taken])
    return spent


def _largest_rows(directory, table_prefix=None):
    """``{table: most cells + delete markers held by one row}`` read from the engine's SQLite
    files (every version and every marker, which the backend contract never shows)."""
    directory = Path(directory)
    catalog = sqlite3.connect(f"file:{directory / 'catalog.sqlite'}?mode=ro", uri=True)
    out = {}
    for name, file in catalog.execute("SELECT name, file FROM tables"):
        name = name.decode() if isinstance(name, bytes) else name
        if table_prefix is not None:
            if not name.startswith(table_prefix + "_"):
                continue
            name = name[len(table_prefix) + 1:]
        conn = sqlite3.connect(f"file:{directory / 'tables' / file}?mode=ro", uri=True)
        counts = {}
        if name == K.METRICS:  # the queue counters row on its own: fixed columns, but versions?
            for sql in ("SELECT COUNT(*) FROM cells WHERE row=?", "SELECT COUNT(*) FROM markers WHERE row=?"):
                out[K.QUEUE_ROW] = out.get(K.QUEUE_ROW, 0) + conn.execute(sql, (K.QUEUE_ROW,)).fetchone()[0]
        # Per product and version columns ("|p=", "|pv=") grow with the distinct values seen,
        # capped by the dimension registry (docs/counters.md), not with the crashes: left out.
        plain = " WHERE instr(qual, X'7C') = 0" if name == K.METRICS else ""
        for sql in (f"SELECT row, COUNT(*) FROM cells{plain} GROUP BY row",
                    f"SELECT row, COUNT(*) FROM markers{plain} GROUP BY row"):
            for row, n in conn.execute(sql):
                counts[row] = counts.get(row, 0) + n
        if name == K.UNPROCESSED_FLAG:  # the claim rows on their own: one per minute of queue time
            claims = [n for row, n in counts.items() if row.startswith(QK.CLAIMS_PREFIX)]
            out[QK.CLAIMS_PREFIX] = max(claims, default=0)
            counts = {row: n for row, n in counts.items() if not row.startswith(QK.CLAIMS_PREFIX)}
        out[name] = max(counts.values(), default=0)
        conn.close()
    catalog.close()
    return out


@pytest.fixture(params=["embedded", "gateway"])
def probed_store(request, tmp_path):
    """``(store, largest_rows())`` on the embedded engine, or through a real gateway on loopback."""
    if request.param == "embedded":
        url, directory, prefix = f"embedded://{tmp_path / 'store'}", tmp_path / "store", None
    else:
        gateway = request.getfixturevalue("gateway_buffered_binary")
        prefix = "q" + str(time.time_ns())[-9:]
        url, directory = f"{gateway.url()}&table_prefix={prefix}", gateway.directory
    with open_store(url) as store:
        store.create_tables()
        yield store, lambda: _largest_rows(directory, prefix)


def test_claim_cost_and_row_sizes_do_not_grow_with_processed_crashes(probed_store):
    store, largest_rows = probed_store
    minutes = collections.Counter()
    _lifecycle(store, seed=1, n=600, minutes=minutes)  # every signature and counter column exists by now
    calls_after_few = _probe(store, seed=2, minutes=minutes)
    rows_after_few = largest_rows()
    _lifecycle(store, seed=3, n=2000, minutes=minutes)
    calls_after_many = _probe(store, seed=4, minutes=minutes)
    rows_after_many = largest_rows()
    assert calls_after_many == calls_after_few
    # No row of any table (the queues, the queue counters row, metrics, ...) holds more cells or
    # markers after 2,600 processed crashes than after 600.
    # (The signature tables hold a row per signature and a column per signature and interval: each
    # seed draws new signature names, so they grow with the names, by design, not with the crashes.
    # A claim row holds the crashes submitted in its minute, like a minute's counter row: all
    # these crashes fall on one day, so its minutes fill up, but never past the minute's crashes.)
    by_signature = {K.SIGNATURES, K.SIGNATURES_SEEN}
    grown = {t: (rows_after_few.get(t), n) for t, n in rows_after_many.items()
             if n > rows_after_few.get(t, 0) and t not in by_signature | {QK.CLAIMS_PREFIX}}
    assert grown == {}
    # a history cell per crash of the minute, each with at most the family's 5 versions
    assert 0 < rows_after_many[QK.CLAIMS_PREFIX] <= 5 * max(minutes.values())
    assert rows_after_many[K.QUEUE_ROW] == len(store.get_metrics("crash_report_queues"))  # 1 version each
    assert rows_after_many[K.UNPROCESSED_FLAG] <= 4 and rows_after_many[K.LEGACY_UNPROCESSED_FLAG] <= 2
    assert queue_table_left(store.backend) == ([], True)


def _save(store, cids):
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i)), {}, c) for i, c in enumerate(cids)])


def _ids(n, salt_cycle=K.SALTS):
    return [crash_id(salt_cycle[i % len(salt_cycle)], BASE_TIME, random.Random(1000 + i)) for i in range(n)]


def test_a_processor_that_outlives_its_lease_never_yields_a_crash_another_holds(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cids = _ids(20)
        _save(store, cids)
        slow = store.new_crashes(processor_id="slow", lease_seconds=1.0)
        first = next(slow)  # its group of 16 is claimed
        time.sleep(1.1)  # ...and its lease ends while it works on the first
        fast = list(store.new_crashes(processor_id="fast"))
        assert sorted(fast) == sorted(cids)  # the first, its 15 unyielded claims, and the rest
        assert list(slow) == []  # the slow one finds it lost them all, and yields none
        store.save_processed_crashes([processed(c) for c in fast])
        assert first in fast and store.queue_sizes()["standard"] == 0


def test_leases_are_renewed_while_the_iterator_holds_claims(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cids = _ids(20)
        _save(store, cids)
        worker = store.new_crashes(processor_id="worker", lease_seconds=2.0)
        done = [next(worker)]
        time.sleep(1.2)  # past half the lease: the next yield renews the 15 it holds
        store.save_processed(processed(done[0]))
        done.append(next(worker))
        time.sleep(1.2)  # past the first lease's end, within the renewed one
        other = list(store.new_crashes(processor_id="other", lease_seconds=60))
        assert other == cids[16:]  # only what the worker never claimed
        done += list(worker)
        assert done == cids[:16]
        assert store.get_processing_state(cids[5])["claim"]["processor"] == "worker"
        assert store.get_processing_state(cids[5])["attempts"] == 0  # a renewal is no new attempt


def test_closing_an_iterator_and_release_give_claims_back(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cids = _ids(6)
        _save(store, cids)
        taker = store.new_crashes(limit=5, processor_id="a")
        first = next(taker)
        taker.close()  # the 4 claimed but never yielded go back now
        assert list(store.new_crashes(processor_id="b")) == cids[1:]
        assert store.release(first) == 1
        assert store.release(first) == 0  # no longer held
        state = store.get_processing_state(first)
        assert state["attempts"] == 0 and not state["dead_lettered"]
        assert list(store.new_crashes(processor_id="c")) == [first]


def test_a_poison_crash_is_dead_lettered_after_its_attempts_and_requeued_by_priority(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        poison, fine = _ids(2)
        _save(store, [poison, fine])
        assert list(store.new_crashes(limit=1, processor_id="p", lease_seconds=0.3)) == [poison]
        for attempt in (1, 2):  # the processor dies each time: the lease runs out
            time.sleep(0.35)
            assert list(store.new_crashes(limit=1, processor_id="p", lease_seconds=0.3)) == [poison]
            assert store.get_processing_state(poison)["attempts"] == attempt
        time.sleep(0.35)
        # the 4th claim finds 3 failed attempts (the default): not handed out, and the next crash is
        assert list(store.new_crashes(limit=1, processor_id="p", lease_seconds=0.3)) == [fine]
        state = store.get_processing_state(poison)
        assert state["dead_lettered"] is True and state["attempts"] == 3 and state["queues"] == ["standard"]
        listed = store.dead_lettered_crashes()
        assert [(d["crash_id"], d["attempts"], d["queue"]) for d in listed] == [(poison, 3, "standard")]
        time.sleep(0.35)
        assert list(store.new_crashes(processor_id="q")) == [fine]  # still not the poison
        store.save_processed(processed(fine))
        assert store.enqueue_priority([poison]) == 1
        assert store.dead_lettered_crashes() == []
        assert list(store.new_crashes(processor_id="q")) == []  # the priority queue has it
        assert list(store.new_crashes(queue="priority", processor_id="q")) == [poison]
        store.save_processed(processed(poison))
        state = store.get_processing_state(poison)
        assert state["processed"] and state["queues"] == [] and not state["dead_lettered"]
        store.settle()  # (the deriver takes the pointer of `fine`, which no priority request served)
        assert queue_table_left(store.backend) == ([], True)
        # emptied by the save's own row write: an empty flag is none
        assert store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(poison)).get(b"flags:dead_lettered") == b""


def test_a_dead_letter_of_the_priority_queue_is_requeued_in_place(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        [cid] = _ids(1)
        _save(store, [cid])
        store.save_processed(processed(cid))
        assert store.enqueue_priority([cid]) == 1
        assert list(store.new_crashes(queue="priority", lease_seconds=0.2, max_attempts=1)) == [cid]
        time.sleep(0.25)  # one claim expired without a save: with max_attempts=1, that is all
        assert list(store.new_crashes(queue="priority", max_attempts=1)) == []
        assert [d["queue"] for d in store.dead_lettered_crashes()] == ["priority"]
        assert store.queue_sizes()["priority"] == 1  # still queued, only parked
        assert store.enqueue_priority([cid]) == 1
        assert list(store.new_crashes(queue="priority", max_attempts=1)) == [cid]
        store.save_processed(processed(cid))
        assert store.queue_sizes()["priority"] == 0 and store.dead_lettered_crashes() == []


def test_a_crash_with_a_priority_request_is_handed_out_by_the_priority_queue_only(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        [cid] = _ids(1)
        _save(store, [cid])
        assert store.enqueue_priority([cid]) == 1
        assert list(store.new_crashes(processor_id="standard")) == []
        assert list(store.new_crashes(queue="priority", processor_id="urgent")) == [cid]
        store.save_processed(processed(cid))
        assert store.queue_sizes()["standard"] == 0 and store.queue_sizes()["priority"] == 0
        assert queue_table_left(store.backend) == ([], True)


def test_the_claim_lives_on_the_standard_row_for_both_queues(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        [cid] = _ids(1)
        store.save_raw_crash(raw_crash(cid, legacy_processing=0), {}, cid)
        assert list(store.new_crashes(queue="legacy", processor_id="old")) == [cid]
        history = claim_history(store.backend, K.time_index_key(cid, BASE_TIME))
        assert [c["processor"] for c in history] == ["old"]
        assert store.backend.get_row(K.LEGACY_UNPROCESSED_FLAG, K.time_index_key(cid, BASE_TIME)) == {
            K.COL_OOID: cid.encode()}  # the legacy row stays a bare pointer
        store.save_processed(processed(cid))
        store.settle()  # (on a cut-over store the deriver takes the pointers)
        assert list(store.backend.scan(K.LEGACY_UNPROCESSED_FLAG)) == []
        assert queue_table_left(store.backend) == ([], True)


def test_one_crash_at_a_time_takes_four_calls(embedded_url):
    """Scan, claims, crash row, Append: the same four calls as a group of any size."""
    with open_store(embedded_url) as store:
        store.create_tables()
        [cid] = _ids(1)
        store.save_raw_crash(raw_crash(cid), {}, cid)
        before = dict(store.backend.calls)
        assert list(store.new_crashes(limit=1, processor_id="one")) == [cid]
        spent = {k: n - before.get(k, 0) for k, n in store.backend.calls.items() if n != before.get(k, 0)}
        assert spent == {"scan": 1, "get_rows": 2, "append_many": 1}


def test_take_validates_max_attempts(embedded_url):
    with open_store(embedded_url) as store:
        for bad in (0, -1, 1.5, "3", True):
            with pytest.raises(InvalidArgument):
                store.new_crashes(max_attempts=bad)


def test_threads_of_one_store_claim_each_crash_once(embedded_url):
    """Processor threads sharing a store take successive crashes instead of all appending a
    claim to the head of the queue: one claim record per crash, each crash processed once."""
    import threading

    with open_store(embedded_url) as store:
        store.create_tables()
        ids = _ids(96)
        _save(store, ids)
        appended, real = [], store.backend.append_many

        def counting(table, items):
            if table == K.UNPROCESSED_FLAG:
                appended.extend(column for _row, cells in items for column in cells)  # claim cells
            return real(table, items)

        store.backend.append_many = counting
        processed_by = {}
        barrier = threading.Barrier(8)

        def processor(n):
            barrier.wait()
            while True:
                got = list(store.new_crashes(limit=4, processor_id=f"t{n}"))
                if not got:
                    return
                for cid in got:
                    processed_by.setdefault(cid, []).append(n)
                    store.save_processed(processed(cid))

        threads = [threading.Thread(target=processor, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(processed_by) == sorted(ids) and all(len(v) == 1 for v in processed_by.values())
        assert len(appended) == len(ids)  # no claim lost to a sibling thread
        assert len(set(appended)) == len(ids)


def test_expire_deletes_old_done_histories_and_keeps_queued_ones(embedded_url):
    from socorro_store.jobs import expiry
    from socorro_store.schema.stored import time_index_key_forms

    with open_store(embedded_url) as store:
        store.create_tables()
        ids = _ids(3)
        _save(store, ids)  # one minute: one claim row
        taken = list(store.new_crashes(limit=3, processor_id="p"))
        store.save_processed_crashes([processed(c) for c in taken[:2]])
        store.settle()  # (on a cut-over store the deriver ends the histories)
        claim_row = QK.claim_row_key(K.time_index_key(ids[0], BASE_TIME))
        recent = expiry.expire(store.backend, now=BASE_TIME + timedelta(days=1))
        assert recent["claim_histories"] == 0  # within the 2 days kept
        report = expiry.expire(store.backend, now=BASE_TIME + timedelta(days=3))
        # (a save ends the history of each key form a pointer of the crash may have: Socorro's
        # 19-character stamps too when the microsecond is 0, as here)
        assert report["claim_histories"] == 2 * len(time_index_key_forms(ids[0], BASE_TIME))
        [(_row, cells)] = store.backend.scan(K.UNPROCESSED_FLAG, prefix=QK.CLAIMS_PREFIX)
        assert list(cells) == [QK.claim_column(K.time_index_key(taken[2], BASE_TIME + timedelta(seconds=2)))]
        assert store.get_processing_state(taken[2])["claim"]["processor"] == "p"  # the queued crash keeps its lease
        store.save_processed(processed(taken[2]))
        store.settle()
        assert expiry.expire(store.backend, now=BASE_TIME + timedelta(days=3))["claim_histories"] == len(
            time_index_key_forms(ids[0], BASE_TIME))
        assert store.backend.get_row(K.UNPROCESSED_FLAG, claim_row) == {}
        assert queue_table_left(store.backend) == ([], True)


def test_threads_polling_one_store_share_one_take(embedded_url):
    """Takers that ask while a take is in flight are claimed for together, from one pass: eight
    threads taking two crashes each cost one scan, one read of claims and crash rows, and two
    Appends (the leader's group, then the seven that queued behind it), not eight of each."""
    import threading

    with open_store(embedded_url) as store:
        store.create_tables()
        ids = _ids(16)
        _save(store, ids)
        shared = store.queue_passes["standard"]
        real_scan = store.backend.scan

        def scan_when_all_queued(*args, **kwargs):  # hold the leader's scan until the others wait
            deadline = time.monotonic() + 10
            while shared._groups.queued < 7 and time.monotonic() < deadline:
                time.sleep(0.001)
            return real_scan(*args, **kwargs)

        store.backend.scan = scan_when_all_queued
        before = dict(store.backend.calls)
        takers = [store.new_crashes(limit=2, processor_id=f"t{n}") for n in range(8)]
        got = {}
        threads = [threading.Thread(target=lambda n=n: got.__setitem__(n, list(takers[n]))) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        spent = {k: n - before.get(k, 0) for k, n in store.backend.calls.items() if n != before.get(k, 0)}
        assert sorted(c for crashes in got.values() for c in crashes) == sorted(ids)
        assert all(len(crashes) == 2 for crashes in got.values())
        assert spent == {"scan": 1, "get_rows": 2, "append_many": 2}
        # each crash is owned by the thread it was handed to
        for n, crashes in got.items():
            assert {store.get_processing_state(c)["claim"]["processor"] for c in crashes} == {f"t{n}"}
