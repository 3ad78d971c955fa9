"""Issue 21, defect 3: a deleted crash stays deleted.

A processor that took a crash before a privacy deletion cannot bring it back by saving it; nor
can a reprocessing request or a dead-lettering that races the deletion.  The write to the crash
row is conditional on the row still naming its crash (check-and-put on ``ids:ooid``), and what a
racing write left is taken back.
"""

from datetime import datetime, timezone

import pytest
from store_helpers import crash_id, processed, raw_crash

from socorro_store.crashstore import crashes, deletion, queue
from socorro_store.errors import CrashDeleted, CrashIDNotFound
from socorro_store.schema import keys as K


def traces(backend, cid):
    """Every (table, row) whose key, column names or values mention crash ``cid``."""
    needle = cid.encode()
    found = []
    for table in backend.list_tables():
        for row, cells in backend.scan(table):
            if needle in row or any(needle in c or needle in v for c, v in cells.items()):
                found.append((table, row))
    return found


class DeletingBackend:
    """A backend whose next ``check_and_put_many`` on crash_reports that checks a crash row's
    existence (``ids:ooid``) or puts its ``flags:priority_processing`` deletes crash ``cid``:
    ``before`` the check (the request raced a deletion), or ``after`` it (a deletion between
    HBase's checkAndPut of one cell and the mutate of the others).  A save sends its other
    crash-row checks (flags) beside that one, in any order."""

    def __init__(self, backend, cid, when):
        self._backend, self._cid, self._when = backend, cid, when

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def check_and_put_many(self, table, items):
        items = list(items)
        if not any(column in (K.COL_OOID, K.COL_PRIORITY) for _row, column, _expected, _puts in items) \
                and not self._backend.atomic_check_and_put:
            return self._backend.check_and_put_many(table, items)  # a transition check beside it
        armed, self._cid = self._cid, None
        if armed and table == K.CRASH_REPORTS and self._when == "before":
            deletion.delete_crashes(self._backend, [armed])
        result = self._backend.check_and_put_many(table, items)
        if armed and table == K.CRASH_REPORTS and self._when == "after":
            deletion.delete_crashes(self._backend, [armed])
        return result


def saved(store, cid, **extra):
    store.save_raw_crash(raw_crash(cid, **extra), {"upload_file_minidump": b"MDMP"}, cid)
    return cid


def test_a_processor_holding_a_deleted_crash_cannot_bring_it_back(store):
    cid = saved(store, crash_id("d"))
    assert list(store.new_crashes(limit=1)) == [cid]
    store.delete_crashes([cid])
    with pytest.raises(CrashDeleted) as info:
        store.save_processed(processed(cid, "secret-signature", url="http://private", email="x@example.com"))
    assert isinstance(info.value, CrashIDNotFound) and info.value.crash_ids == [cid]
    with pytest.raises(CrashIDNotFound):
        store.get_unredacted_processed(cid)
    assert list(store.crashes_by_signature("secret-signature")) == []
    assert traces(store.backend, cid) == []
    store.flush_counters()
    assert store.get_signature_counters("secret-signature") == {}


def test_a_batch_save_writes_the_others_and_names_the_deleted_crash(store):
    gone, kept = saved(store, crash_id("a")), saved(store, crash_id("b"))
    assert sorted(store.new_crashes(limit=2)) == sorted([gone, kept])
    store.delete_crashes([gone])
    with pytest.raises(CrashDeleted) as info:
        store.save_processed_crashes([processed(gone, "s"), processed(kept, "s")])
    assert info.value.crash_ids == [gone]
    assert store.get_processed(kept)["uuid"] == kept and list(store.crashes_by_signature("s")) == [kept]
    assert traces(store.backend, gone) == []


def test_a_save_racing_a_deletion_leaves_nothing(store):
    cid = saved(store, crash_id("c"))
    prepared = crashes.prepare_processed(processed(cid, "racy", email="x@example.com"))
    with pytest.raises(CrashDeleted):
        crashes.write_processed(DeletingBackend(store.backend, cid, "before"), [prepared], store.live_counters)
    assert traces(store.backend, cid) == []


def test_a_deletion_just_after_a_save_deletes_the_processed_crash(store):
    cid = saved(store, crash_id("c"))
    prepared = crashes.prepare_processed(processed(cid, "racy", email="x@example.com"))
    crashes.write_processed(DeletingBackend(store.backend, cid, "after"), [prepared], store.live_counters)
    with pytest.raises(CrashIDNotFound):
        store.get_unredacted_processed(cid)
    assert list(store.crashes_by_signature("racy")) == []
    assert [t for t in traces(store.backend, cid) if t[0] != K.UNPROCESSED_FLAG] == []


def test_a_reprocessing_request_racing_a_deletion_leaves_nothing(store):
    cid = saved(store, crash_id("e"))
    store.save_processed(processed(cid, "sig"))
    now = datetime.now(timezone.utc)
    racing = DeletingBackend(store.backend, cid, "before")
    assert crashes.enqueue_priority(racing, [cid], now, store.live_counters) == 0
    assert traces(store.backend, cid) == []
    with pytest.raises(CrashIDNotFound):
        store.enqueue_priority([cid])  # and once deleted, a request is refused outright


def test_dead_lettering_a_deleted_crash_leaves_nothing(store):
    cid = saved(store, crash_id("f"))
    row = K.time_index_key(cid, store.get_processing_state(cid)["submitted"])
    store.delete_crashes([cid])
    queue.dead_letter(store.backend, "standard", [(row, cid, 3)])
    assert traces(store.backend, cid) == []
    assert store.dead_lettered_crashes() == []


def test_deleting_queued_crashes_moves_the_queue_counters_once(store):
    """Issue 32, defect 8: a crash deleted while queued (standard and legacy, or with a pending
    priority request) leaves no phantom in ``queue_sizes()``; a processed one moves nothing, and
    a deletion after the save that dequeued a crash moves nothing again."""
    from socorro_store.jobs import scrutiny  # noqa: PLC0415

    queued = saved(store, crash_id("1"), legacy_processing=0)
    done = saved(store, crash_id("2"), legacy_processing=0)
    requested = saved(store, crash_id("3"))
    store.save_processed(processed(done, "sig"))
    store.save_processed(processed(requested, "sig"))
    assert store.enqueue_priority([requested]) == 1
    sizes = store.queue_sizes()
    assert (sizes["standard"], sizes["legacy"], sizes["priority"]) == (1, 1, 1)
    assert sorted(store.delete_crashes([queued, done, requested])) == sorted([queued, done, requested])
    sizes = store.queue_sizes()
    assert (sizes["standard"], sizes["legacy"], sizes["priority"]) == (0, 0, 0)
    assert scrutiny.count_queues(store.backend) == {"standard": 0, "legacy": 0, "priority": 0}
    for cid in (queued, done, requested):
        assert traces(store.backend, cid) == []
