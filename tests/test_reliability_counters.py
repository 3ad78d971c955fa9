"""Issue 21, defects 8, 9 and 10: live counters count each crash once, whoever saves it.

8. A lease takeover leaves two processors holding a crash's first processing; both save.  The
   first-processing transition (``flags:processed`` N -> Y) is a check-and-put, so exactly one save
   counts it; a late save also takes the crash off the dead-letter list.
9. A slow processor renewing its claims after their lease ended (nobody took them meanwhile)
   continues its own lease: no failed attempt is counted, so it dead-letters nothing.
10. A save whose queue-row deletes fail after the crash row was written has already sent its
   counters (counters go once the crash is processed, before the queue clean-up), so the retry,
   which sees the crash processed and counts nothing, leaves them exact.
"""

import time
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore import claims
from socorro_store.errors import BackendUnavailable
from socorro_store.schema import keys as K

DAY_COLUMN = K.signature_counter_columns(BASE_TIME)["day"]


def _store_with(store, cid, legacy=None):
    extra = {} if legacy is None else {"legacy_processing": legacy}
    store.save_raw_crashes([(raw_crash(cid, BASE_TIME, **extra), {}, cid)])


def _daily(store, signature="sig"):
    return store.get_signature_counters(signature).get(DAY_COLUMN.split(b":", 1)[1].decode(), 0)


def test_a_lease_takeover_with_two_saves_counts_the_crash_once(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cid = crash_id("a")
        _store_with(store, cid, legacy=0)
        a = store.new_crashes(processor_id="A", lease_seconds=0.3)
        assert next(a) == cid
        time.sleep(0.35)  # A's lease lapses while A works
        with open_store(embedded_url) as other:  # B, another processor host, takes over
            assert list(other.new_crashes(processor_id="B")) == [cid]
            other.save_processed(processed(cid))
        store.save_processed(processed(cid))  # A's late save
        assert _daily(store) == 1
        sizes = store.queue_sizes()
        assert sizes["standard"] == 0 and sizes["legacy"] == 0 and sizes["processed_legacy"] == 1
        assert store.get_metrics(K.metrics_row(BASE_TIME, "day")).get("crash_report_processing_errors", 0) == 0


def test_concurrent_first_saves_of_one_crash_in_one_batch_path_count_once(embedded_url):
    with open_store(embedded_url) as store, open_store(embedded_url) as other:
        store.create_tables()
        cid = crash_id("b")
        _store_with(store, cid)
        # both read the crash as unprocessed before either writes (a takeover's two holders)
        took = list(store.new_crashes(processor_id="A", lease_seconds=60))
        assert took == [cid]
        stale = store.held_claims.get(cid).state
        assert stale["processed"] is False
        other.save_processed(processed(cid, signature="other"))
        store.save_processed_crashes([processed(cid, signature="other")])
        assert _daily(store, "other") == 1
        assert store.queue_sizes()["standard"] == 0


def test_a_late_save_after_dead_lettering_takes_the_crash_off_the_dead_letter_list(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cid = crash_id("c")
        _store_with(store, cid)
        late = store.new_crashes(processor_id="late", lease_seconds=0.2, max_attempts=1)
        assert next(late) == cid
        time.sleep(0.25)
        with open_store(embedded_url) as other:  # the next take finds one failed attempt: dead letter
            assert list(other.new_crashes(processor_id="other", max_attempts=1)) == []
            assert [d["crash_id"] for d in other.dead_lettered_crashes()] == [cid]
        store.save_processed(processed(cid))  # the slow processor saves after all
        assert store.dead_lettered_crashes() == []
        state = store.get_processing_state(cid)
        assert state["processed"] and not state["dead_lettered"]
        assert _daily(store) == 1


def test_a_late_renewal_by_the_same_iterator_is_no_failed_attempt(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cids = [crash_id(s, BASE_TIME) for s in "0123"]
        for i, cid in enumerate(cids):
            store.save_raw_crashes([(raw_crash(cid, BASE_TIME + timedelta(seconds=i)), {}, cid)])
        slow = store.new_crashes(processor_id="slow", lease_seconds=0.4, max_attempts=1)
        first = next(slow)  # claims the group; hands out one
        time.sleep(0.45)  # healthy but slow: its leases lapse, nobody takes over
        store.save_processed(processed(first))
        rest = list(slow)  # the next yield renews late: its own lease continues
        assert sorted([first] + rest) == sorted(cids)
        assert store.dead_lettered_crashes() == []
        for cid in rest:
            assert store.get_processing_state(cid)["attempts"] == 0


def test_a_late_release_by_the_same_iterator_gives_the_crash_back(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cids = [crash_id(s, BASE_TIME) for s in "01"]
        for i, cid in enumerate(cids):
            store.save_raw_crashes([(raw_crash(cid, BASE_TIME + timedelta(seconds=i)), {}, cid)])
        taker = store.new_crashes(processor_id="p", lease_seconds=0.3, max_attempts=1)
        next(taker)
        time.sleep(0.35)
        taker.close()  # releases the claim it never handed out, after its lease ended
        with open_store(embedded_url) as other:
            assert cids[1] in list(other.new_crashes(processor_id="q", max_attempts=1))
        assert store.get_processing_state(cids[1])["attempts"] == 0


def test_lease_walk_same_token_continues_and_another_token_takes_over():
    t = claims.decode_claims
    history = t(claims.encode_claim("p", 0, 100, "tok") + claims.encode_claim("p", 150, 250, "tok"))
    lease = claims.lease_of(history)
    assert (lease.owner, lease.expires, lease.attempts) == (0, 250, 0)
    taken = t(claims.encode_claim("p", 0, 100, "tok") + claims.encode_claim("q", 150, 250, "other")
              + claims.encode_claim("p", 160, 260, "tok"))
    lease = claims.lease_of(taken)
    assert (lease.owner, lease.expires, lease.attempts) == (1, 250, 1)


class FailingQueueDeletes:
    """A backend whose ``mutate_tables`` fails (after nothing of it was written) while ``armed``:
    the queue-row deletes that follow a processed crash row."""

    def __init__(self, backend):
        self._backend, self.armed = backend, False

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def mutate_tables(self, mutations_by_table):
        if self.armed and K.UNPROCESSED_FLAG in mutations_by_table:
            self.armed = False
            raise BackendUnavailable("queue-row deletes failed")
        return self._backend.mutate_tables(mutations_by_table)


def test_a_retry_after_failed_queue_deletes_leaves_the_counters_exact(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        cid = crash_id("e")
        _store_with(store, cid, legacy=0)
        flaky = FailingQueueDeletes(store.backend)
        store.backend = flaky
        flaky.armed = True
        with pytest.raises(BackendUnavailable):
            store.save_processed_crashes([processed(cid)])
        assert store.get_processing_state(cid)["processed"]  # the crash row was written
        store.save_processed_crashes([processed(cid)])  # the retry
        assert _daily(store) == 1
        sizes = store.queue_sizes()
        assert (sizes["standard"], sizes["legacy"], sizes["processed_legacy"]) == (0, 0, 1)
        assert store.get_processing_state(cid)["queues"] == []
        assert sum(store.live_counters.failures.values()) == 0
        store.backend = flaky._backend


class FailingCrashRowWrite:
    """A backend without an atomic multi-cell check-and-put (HBase's Thrift1) whose next
    crash-row write (the check-and-put on ``ids:ooid``) fails after writing nothing."""

    atomic_check_and_put = False

    def __init__(self, backend):
        self._backend, self.armed = backend, True

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def check_and_put_many(self, table, items):
        if self.armed and table == K.CRASH_REPORTS and items[0][1] == K.COL_OOID:
            self.armed = False
            raise BackendUnavailable("crash row write failed")
        return self._backend.check_and_put_many(table, items)


def test_a_failed_crash_row_write_leaves_the_first_processing_to_the_retry(embedded_url):
    """The N -> Y check follows the crash row: it never marks processed a crash whose processed
    data was not written, so the retry is the first processing and counts it once."""
    with open_store(embedded_url, background_counters=False) as store:
        store.create_tables()
        cid = crash_id("f")
        _store_with(store, cid, legacy=0)
        store.backend = failing = FailingCrashRowWrite(store.backend)
        with pytest.raises(BackendUnavailable):
            store.save_processed_crashes([processed(cid)])
        state = store.get_processing_state(cid)
        assert not state["processed"] and state["signature"] is None
        store.save_processed_crashes([processed(cid)])  # the retry
        store.backend = failing._backend
        assert store.get_processing_state(cid)["processed"] and _daily(store) == 1
        sizes = store.queue_sizes()
        assert (sizes["standard"], sizes["legacy"], sizes["processed_legacy"]) == (0, 0, 1)
        assert sum(store.live_counters.failures.values()) == 0
