"""The queue clean-up of a cut-over store is the deriver's: a processed save of a crash this
store's collector queued sends none, and nothing takes the crash again meanwhile (on every
backend kind)."""

from datetime import timedelta

from store_helpers import BASE_TIME, crash_id, processed, queue_table_left, raw_crash

from socorro_store import open_store
from socorro_store.crashstore.claims import decode_claims
from socorro_store.crashstore.dequeue import dequeue_mutations
from socorro_store.schema import keys as K
from socorro_store.schema import queue_keys as QK


def _queued(store, n, legacy_processing=0):
    ids = [crash_id("0123456789abcdef"[i % 16]) for i in range(n)]
    store.save_raw_crashes([(raw_crash(c, BASE_TIME + timedelta(seconds=i), legacy_processing=legacy_processing), {}, c)
                            for i, c in enumerate(ids)])
    return ids


def _queue_writes(store, action):
    """What ``action`` wrote to the two queue tables: ``[(table, mutations)]``."""
    written, real = [], store.backend.mutate_tables

    def spy(mutations, *args, **kwargs):
        written.extend((t, m) for t, m in mutations.items() if m and t in (K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG))
        return real(mutations, *args, **kwargs)

    store.backend.mutate_tables = spy
    try:
        action()
    finally:
        del store.backend.mutate_tables
    return written


def test_a_processed_save_leaves_the_queue_clean_up_to_the_deriver(store, backend_url):
    ids = _queued(store, 4)
    assert sorted(store.new_crashes(limit=4, processor_id="p")) == sorted(ids)
    assert _queue_writes(store, lambda: store.save_processed_crashes([processed(c) for c in ids])) == []
    # the pointers wait for the deriver, and nothing takes the crashes meanwhile: not this store
    # (its own saves), not another process (live claims, then rows that say processed)
    assert queue_table_left(store.backend)[0]
    assert list(store.new_crashes(processor_id="q")) == []
    assert list(store.new_crashes(queue="legacy", processor_id="q")) == []
    with open_store(backend_url) as other:
        assert list(other.new_crashes(processor_id="r")) == []
        assert list(other.new_crashes(processor_id="r", lease_seconds=0.001)) == []
    assert all(store.get_processing_state(c)["queues"] == [] for c in ids)
    store.settle()
    assert queue_table_left(store.backend) == ([], True)  # pointers gone, histories done
    assert list(store.backend.scan(K.LEGACY_UNPROCESSED_FLAG)) == []
    sizes = store.queue_sizes()
    assert (sizes["standard"], sizes["legacy"], sizes["processed_legacy"]) == (0, 0, 4)


def test_a_crash_processed_by_another_process_is_skipped_after_its_claim_ended(store, backend_url):
    """A take reads the claim (ended: the processor's lease ran out before the deriver ran) and
    the crash row (processed): it does not hand the crash out again."""
    [cid] = _queued(store, 1, legacy_processing=1)
    with open_store(backend_url) as other:
        assert list(other.new_crashes(processor_id="p", lease_seconds=0.001)) == [cid]
        other.save_processed(processed(cid))
        assert queue_table_left(store.backend)[0]  # (no deriver has run)
        assert list(store.new_crashes(processor_id="q")) == []
        assert queue_table_left(store.backend)[0] == []  # the take deleted the leftover pointer
        state = store.get_processing_state(cid)
        assert state["processed"] and state["queues"] == [] and state["claim"] is None
    store.settle()
    assert queue_table_left(store.backend) == ([], True)


def test_a_served_priority_request_keeps_its_clean_up_in_the_save(store):
    [cid] = _queued(store, 1, legacy_processing=1)
    assert store.enqueue_priority([cid]) == 1
    assert list(store.new_crashes(queue="priority", processor_id="p")) == [cid]
    written = _queue_writes(store, lambda: store.save_processed(processed(cid)))
    assert [table for table, _m in written] == [K.UNPROCESSED_FLAG]
    assert queue_table_left(store.backend) == ([], True)
    store.settle()
    sizes = store.queue_sizes()
    assert (sizes["standard"], sizes["priority"]) == (0, 0)


def test_a_deleted_crash_leaves_no_claim_cell_even_after_a_late_batch(store):
    """A batch the deriver read before a deletion and applied after it writes the crash's
    claim histories back (``done``); deriving the deletion deletes them again."""
    [cid] = _queued(store, 1)
    assert list(store.new_crashes(processor_id="p")) == [cid]
    store.save_processed(processed(cid))
    store.settle()
    claim_row = QK.claim_row_key(K.time_index_key(cid, BASE_TIME))
    real, landed = store.live_counters.settle, []

    def late_batch_then_settle(*args, **kwargs):
        # the deletion's rows are gone and its record written: the late batch lands now
        store.backend.mutate_tables(dequeue_mutations([(cid, BASE_TIME, 0)]))
        landed.append(bool(store.backend.get_row(K.UNPROCESSED_FLAG, claim_row)))
        return real(*args, **kwargs)

    store.live_counters.settle = late_batch_then_settle
    try:
        store.delete_crashes([cid])  # derives its deletion record before it returns
    finally:
        del store.live_counters.settle
    assert landed == [True]
    assert store.backend.get_row(K.UNPROCESSED_FLAG, claim_row) == {}
    assert queue_table_left(store.backend) == ([], True)


def test_the_deriver_ends_each_key_form_s_history_once_per_claim_row(store):
    """Crashes of one minute share a claim row: one put ends all their histories."""
    ids = _queued(store, 3, legacy_processing=1)
    assert sorted(store.new_crashes(limit=3, processor_id="p")) == sorted(ids)
    store.save_processed_crashes([processed(c) for c in ids])
    store.settle()
    rows = list(store.backend.scan(K.UNPROCESSED_FLAG, prefix=QK.CLAIMS_PREFIX))
    assert len(rows) == 1
    histories = [decode_claims(v) for v in rows[0][1].values()]
    # each crash's key forms (ours, and Socorro's 19-character one at a whole second)
    assert len(histories) >= 3 and all(h and h[-1].get("done") for h in histories)


def test_a_store_s_takes_pass_over_its_own_recent_saves_unread(store):
    """The pointers of a store's own saves, left to the deriver, cost its takes no read of
    claims or crash rows: the scan finds them, and the take knows it saved them."""
    ids = _queued(store, 4)
    assert sorted(store.new_crashes(limit=4, processor_id="p")) == sorted(ids)
    store.save_processed_crashes([processed(c) for c in ids])
    before = store.backend.calls.copy()
    assert list(store.new_crashes(processor_id="q")) == []
    spent = store.backend.calls - before
    assert "get_rows" not in spent and "append_many" not in spent and "append" not in spent
    assert sum(n for kind, n in spent.items() if kind.startswith("scan")) >= 1  # the pointers were scanned
