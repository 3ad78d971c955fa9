"""Saving a crash id again (a collector retry): listed, queued and counted once; never un-processed."""

import threading
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import CrashConflict
from socorro_store.crashstore import resubmissions
from socorro_store.crashstore.crashes import prepare_raw
from socorro_store.schema import keys as K

DUMPS = {"upload_file_minidump": b"\x00MDMP" + bytes(300), "upload_file_minidump_browser": b"browser"}
HOUR = (BASE_TIME, BASE_TIME + timedelta(hours=1))


def _pointer_rows(store, table):
    return [row for row, _cells in store.backend.scan(table)]


def _assert_once(store, cid, processed_already=False):
    """``cid`` is listed once, in the queue at most once, and counted once."""
    assert list(store.crashes_submitted(*HOUR)) == [cid]
    assert len(_pointer_rows(store, K.SUBMITTED_TIME)) == 1
    assert store.get_metrics("2016-09-18")["submitted_crash_reports"] == 1
    assert store.get_metrics(b"2016-09-18T12:00")["submitted_crash_reports"] == 1
    queue = store.get_metrics(K.QUEUE_ROW)
    assert queue["inserts_unprocessed"] == 1
    assert store.queue_sizes()["standard"] == (0 if processed_already else 1)
    assert store.get_processing_state(cid)["processed"] is processed_already


def test_identical_retry_is_a_no_op(store):
    cid = crash_id("a")
    store.save_raw_crash(raw_crash(cid), DUMPS, cid)
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    rows = all_rows(store.backend)
    calls = dict(store.backend.calls)
    store.save_raw_crash(raw_crash(cid), dict(DUMPS), cid)
    assert all_rows(store.backend) == rows
    # a retry reads (state cells, then the payload of the stored crash) and writes nothing
    assert store.backend.calls["mutate_rows"] == calls["mutate_rows"]
    assert store.backend.calls.get("increment_many") == calls.get("increment_many")
    _assert_once(store, cid)
    assert list(store.new_crashes()) == [cid]
    assert list(store.new_crashes()) == []


def test_retry_after_processing_keeps_the_crash_processed(store):
    cid = crash_id("b")
    store.save_raw_crash(raw_crash(cid), DUMPS, cid)
    assert list(store.new_crashes()) == [cid]
    store.save_processed(processed(cid, signature="sig"))
    store.save_raw_crash(raw_crash(cid), DUMPS, cid)
    _assert_once(store, cid, processed_already=True)
    assert list(store.new_crashes()) == []
    assert store.get_processed(cid)["signature"] == "sig"
    assert store.get_signature_counters("sig")["daily_2016-09-18"] == 1


def test_restamped_retry_keeps_the_first_submission(store):
    cid = crash_id("c")
    store.save_raw_crash(raw_crash(cid), DUMPS, cid)
    store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(seconds=5)), DUMPS, cid)
    _assert_once(store, cid)
    assert len(_pointer_rows(store, K.UNPROCESSED_FLAG)) == 1
    assert store.get_processing_state(cid)["submitted"] == K.format_timestamp(BASE_TIME).decode()
    assert store.get_raw_crash(cid)["submitted_timestamp"] == BASE_TIME.isoformat()


@pytest.mark.parametrize("change", [
    ("annotations", lambda cid: (raw_crash(cid, Version="121.0"), DUMPS)),
    ("a dump", lambda cid: (raw_crash(cid), {**DUMPS, "upload_file_minidump": b"other"})),
    ("one dump less", lambda cid: (raw_crash(cid), {"upload_file_minidump": DUMPS["upload_file_minidump"]})),
], ids=lambda change: change[0])
def test_other_payload_under_a_stored_id_is_refused(store, change):
    cid = crash_id("d")
    store.save_raw_crash(raw_crash(cid), DUMPS, cid)
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    rows = all_rows(store.backend)
    raw, dumps = change[1](cid)
    with pytest.raises(CrashConflict, match=cid):
        store.save_raw_crash(raw, dumps, cid)
    with pytest.raises(CrashConflict):
        store.save_raw_crashes([(raw_crash(x), {}, x) for x in (crash_id("e"),)] + [(raw, dumps, cid)])
    assert all_rows(store.backend) == rows
    assert store.get_raw_dumps(cid) == DUMPS
    _assert_once(store, cid)


def test_batch_skips_retries_with_one_small_read(store):
    old = [crash_id(s) for s in "0123"]
    store.save_raw_crashes([(raw_crash(c), {}, c) for c in old])
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    new = [crash_id(s) for s in "456789"]
    calls = dict(store.backend.calls)
    batch = [(raw_crash(c), {}, c) for c in new + old + new[:1]]
    prepared = [prepare_raw(*item[:2], item[2]) for item in batch]
    outcomes = resubmissions.sort_out(store.backend, prepared)
    # state cells of all, then the payload of the stored ones: two reads for the whole batch
    assert store.backend.calls["get_rows"] - calls["get_rows"] == 2
    assert outcomes == [resubmissions.NEW] * len(new) + [resubmissions.RETRY] * (len(old) + 1)
    assert store.save_raw_crashes(batch) == len(new)
    extra = crash_id("a")
    assert store.save_raw_crashes([(raw_crash(extra), {}, extra)]) == 1
    assert sorted(store.crashes_submitted(*HOUR)) == sorted(old + new + [extra])
    assert store.get_metrics("2016-09-18")["submitted_crash_reports"] == len(old) + len(new) + 1
    assert store.queue_sizes()["standard"] == len(old) + len(new) + 1


def test_a_batch_of_new_crashes_pays_one_small_read(store):
    """The existence check is one multi-row get whatever the batch size, never one per crash."""
    def reads_of(ids):
        calls = store.backend.calls["get_rows"]
        store.save_raw_crashes([(raw_crash(c), DUMPS, c) for c in ids])
        store.flush_counters()  # the counters' own reads (registry, in the background) come in too
        return store.backend.calls["get_rows"] - calls

    reads_of([crash_id("e")])  # a store's first save also reads the product/version registry (then cached)
    one = reads_of([crash_id("0")])
    assert one >= 1
    assert reads_of([crash_id(s) for s in "0123456789abcdef"]) == one


def test_concurrent_saves_of_one_id_store_it_once(store):
    cid = crash_id("f")
    errors = []

    def save():
        try:
            store.save_raw_crash(raw_crash(cid), DUMPS, cid)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=save) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    _assert_once(store, cid)
    assert list(store.new_crashes()) == [cid]
