"""The deriver reads a counter cell only when it does not know its value (issue 38: derivation
at batch cost), and a batch that fails part way is applied whole before the next one.

Every backend kind; the deriver is driven pass by pass, holding its lease between passes as a
background deriver does.
"""

import random

import pytest
from store_helpers import BASE_TIME, crash_id, processed, raw_crash

from socorro_store.backends import Increment
from socorro_store.crashstore import counter_deriver, counters
from socorro_store.crashstore.dimensions import Dimensions
from socorro_store.errors import BackendError
from socorro_store.schema import keys as K
from test_derivation_deriver import derived, truth


@pytest.fixture
def store(cut_over_store):
    return cut_over_store


def _deriver(store):
    return counter_deriver.admitting_deriver(store.backend, Dimensions(), background=False)


def _save(store, rng, signature="A"):
    cid = crash_id(rng=rng)
    store.save_raw_crash(raw_crash(cid), {}, cid)
    store.save_processed(processed(cid, signature=signature))
    return cid


def _pass(deriver):
    before = deriver.cells_read
    result = deriver.derive_pass()
    assert result is not None and result["derived"] >= 1, result
    return deriver.cells_read - before


def test_a_holder_reads_only_the_cells_it_does_not_know(store):
    rng = random.Random(5)
    deriver = _deriver(store)
    try:
        _save(store, rng)
        first = _pass(deriver)  # a new hold: every cell read
        assert first > 20
        _save(store, rng)  # the same counters as the first crash: all known
        assert _pass(deriver) == 0
        _save(store, rng, signature="B")  # a new signature: only its own cells are read
        third = _pass(deriver)
        assert 0 < third < first
        assert derived(store.backend) == truth(store.backend)
    finally:
        deriver.close()


def test_a_verifying_batch_sees_a_write_beside_the_deriver_and_then_the_truth_is_restored(store):
    rng = random.Random(6)
    deriver = _deriver(store)
    try:
        _save(store, rng)
        _pass(deriver)
        day = K.metrics_row(BASE_TIME, "day")
        submitted = counters.counter_column(counters.SUBMITTED)
        store.backend.increment_many([Increment(K.METRICS, day, submitted, 5)])  # an older writer's count
        _save(store, rng)
        assert _pass(deriver) == 0  # not verifying: the known value is written, the foreign count undone
        assert deriver.derive_pass() == {"records": 0, "derived": 0, "kept": 0}
        assert counter_deriver.foreign_writes(store.backend)["count"] == 0
        assert derived(store.backend) == truth(store.backend)
        store.backend.increment_many([Increment(K.METRICS, day, submitted, 5)])
        deriver._known.verify_next()  # as every VERIFY_SECONDS
        _save(store, rng)
        assert _pass(deriver) > 20
        found = counter_deriver.foreign_writes(store.backend)
        assert found["count"] >= 1 and "wrote 2, read 7" in found["last"], found
    finally:
        deriver.close()


def _fail_passes_part_way(store, deriver, passes):
    """Run ``passes`` derive passes whose ``mutate_tables`` lands only the counted facts (what
    the crashes are counted under), not their counts, then fails; returns the tables each call
    was given."""
    backend = store.backend
    real, calls = backend.mutate_tables, []

    def half(mutations):
        calls.append(list(mutations))
        real({table: m for table, m in mutations.items() if table == K.DERIVED})
        raise BackendError("connection lost mid-batch")

    backend.mutate_tables = half
    try:
        for _ in range(passes):
            with pytest.raises(BackendError):
                deriver.derive_pass()
    finally:
        del backend.mutate_tables
    return calls


def test_a_batch_applied_part_way_is_applied_whole_before_the_next(store):
    """The journal is in the lease row, the apply fails after some of its tables: the next pass
    takes the lease again and applies the journal whole, so no crash is counted twice or lost."""
    rng = random.Random(7)
    deriver = _deriver(store)
    try:
        _save(store, rng)
        _pass(deriver)
        _save(store, rng)
        _save(store, rng, signature="B")
        calls = _fail_passes_part_way(store, deriver, 1)
        assert K.DERIVED in calls[0] and len(calls[0]) > 1  # part of the batch landed
        while deriver.derive_pass()["records"]:
            pass
        assert derived(store.backend) == truth(store.backend)
        assert deriver.replays == 1
    finally:
        deriver.close()


def test_a_replay_that_fails_part_way_is_replayed_again(store):
    """The batch fails part way, then so does its replay by the next pass: the pass after that
    replays the journal again (the lease taken again), rather than derive on half-applied cells."""
    rng = random.Random(8)
    deriver = _deriver(store)
    try:
        _save(store, rng)
        _pass(deriver)
        _save(store, rng)
        _save(store, rng, signature="B")
        calls = _fail_passes_part_way(store, deriver, 2)  # the batch, then its replay
        assert len(calls) == 2 and all(K.DERIVED in c and len(c) > 1 for c in calls)
        while deriver.derive_pass()["records"]:
            pass
        assert derived(store.backend) == truth(store.backend)
        assert deriver.replays == 1
    finally:
        deriver.close()
