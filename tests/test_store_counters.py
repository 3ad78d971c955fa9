"""Live counters: metrics at every level, queue counters, signature counters, first-seen."""

from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, counted_live, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.crashstore.counters import coalesce, submit_increments
from socorro_store.schema import keys as K

LEVEL_ROWS = ["2016", "2016-09", "2016-09-18", "2016-09-18T12", "2016-09-18T12:00"]


def test_submit_counters_at_every_level(store):
    a, b, c, d = (crash_id(s) for s in "abcd")
    store.save_raw_crashes([
        (raw_crash(a, legacy_processing=0, ProcessType="plugin", HangID="h"), {}, a),
        (raw_crash(b, legacy_processing=0, HangID="h"), {}, b),
        (raw_crash(c, legacy_processing=1, ProcessType="content"), {}, c),
    ])
    store.save_raw_crash(raw_crash(d, legacy_processing=2, ProcessType="default"), {}, d)
    for row in LEVEL_ROWS:
        assert store.get_metrics(row) == {
            "submitted_crash_reports": 4,
            "submitted_crash_reports_legacy_throttle_0": 2,
            "submitted_crash_reports_legacy_throttle_1": 1,
            "submitted_crash_reports_legacy_throttle_2": 1,
            "submitted_oop_plugin_crash_reports": 1,
            "submitted_oop_content_crash_reports": 1,
            "submitted_crash_report_hang_pairs": 1,
        }, row
    assert store.get_metrics("2016-09-18T13") == {}
    assert store.get_metrics("crash_report_queues") == {"inserts_unprocessed": 4, "inserts_unprocessed_legacy": 2}


def test_hang_pair_counted_once_even_when_saved_again(store):
    a, b = crash_id("1"), crash_id("2")
    store.save_raw_crash(raw_crash(a, HangID="pair"), {}, a)
    store.save_raw_crash(raw_crash(b, HangID="pair", ProcessType="plugin"), {}, b)
    store.save_raw_crash(raw_crash(b, HangID="pair", ProcessType="plugin"), {}, b)  # a retry
    assert store.get_metrics("2016-09-18")["submitted_crash_report_hang_pairs"] == 1


def test_processing_counters_and_unique_signatures(store):
    hour2 = BASE_TIME + timedelta(hours=1)
    ids = [crash_id(s) for s in "0123456"]
    times = [BASE_TIME, BASE_TIME, BASE_TIME, hour2, hour2, hour2, hour2]
    store.save_raw_crashes([(raw_crash(c, t), {}, c) for c, t in zip(ids, times)])
    sigs = ["foo", "foo", "foo::bar", "foo", None, "", "baz"]
    store.save_processed_crashes([processed(c, s) for c, s in zip(ids[:3], sigs[:3])])
    store.save_processed_crashes([processed(c, s) for c, s in zip(ids[3:], sigs[3:])])
    assert store.get_metrics("2016-09-18T12")["unique_crash_signatures"] == 2        # foo, foo::bar
    assert store.get_metrics("2016-09-18T13")["unique_crash_signatures"] == 4        # foo, null, empty, baz
    assert store.get_metrics("2016-09-18")["unique_crash_signatures"] == 5          # foo seen once a day
    assert store.get_metrics("2016")["unique_crash_signatures"] == 5
    assert "unique_crash_signatures" not in store.get_metrics("2016-09-18T12:00")    # no minute level
    assert store.get_metrics("2016-09-18T13")["crash_report_processing_errors"] == 1
    assert store.get_signature_counters("foo") == {
        "hourly_2016-09-18T12": 2, "hourly_2016-09-18T13": 1, "daily_2016-09-18": 3,
        "monthly_2016-09": 3, "yearly_2016": 3}
    assert store.get_signature_counters(None) == store.get_signature_counters("##null##")
    assert store.get_signature_counters("")["daily_2016-09-18"] == 1
    assert store.get_signature_counters("foo::bar")["daily_2016-09-18"] == 1
    queues = store.get_metrics("crash_report_queues")
    assert queues["deletes_unprocessed"] == 7


def test_one_increment_call_per_crash_and_per_batch(store, backend_kind):
    if backend_kind == "bigtable-emulator":
        pytest.skip("bigtable-emulator: Bigtable has no multi-row increment; increment_many is one "
                    "ReadModifyWriteRow call per row (docs/bigtable.md)")
    if backend_kind == "hbase-real-thrift2":
        pytest.skip("hbase-real-thrift2: Thrift2 has no multi-row increment (Thrift1's incrementRows); "
                    "increment_many is one increment call per row, overlapped")
    counted_live(store)  # the live path's sends (a cut-over store's saves increment nothing)
    ids = [crash_id(s) for s in "89ab"]
    before = store.backend.calls.copy()
    store.save_raw_crashes([(raw_crash(c), {}, c) for c in ids])
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    mid = store.backend.calls.copy()
    # one increment_many for the batch (the embedded backend counts one per table: metrics only),
    # spread over at most max_increment_calls RPCs on HBase's Thrift1, whatever the crashes
    spread = getattr(store.backend, "max_increment_calls", 1)
    assert 1 <= mid["increment_many"] - before["increment_many"] <= spread
    assert mid["increment"] == before["increment"]
    store.save_processed_crashes([processed(c, "same") for c in ids])
    after = store.backend.calls
    assert after["increment"] == before["increment"]
    store.flush_counters()
    after = store.backend.calls
    assert 1 <= after["increment_many"] - mid["increment_many"] <= 2 * spread  # metrics + signatures tables


def test_coalescing_within_a_batch():
    incs = submit_increments(BASE_TIME, 0, "content") + submit_increments(BASE_TIME, 0, "content")
    merged = coalesce(incs)
    assert len(merged) == len(incs) // 2 and {i.amount for i in merged} == {2}
    assert {i.row for i in merged} == {r.encode() for r in LEVEL_ROWS} | {K.QUEUE_ROW}


def test_first_seen_is_exact_under_concurrent_processors(embedded_url):
    """Eight threads process crashes of the same new signatures at once: each interval counts once."""
    import threading

    with open_store(embedded_url) as store:
        store.create_tables()
        ids = [crash_id(s) for s in "0123456789abcdef"]
        times = [BASE_TIME + timedelta(hours=i % 3) for i in range(len(ids))]  # 3 hours, 1 day
        store.save_raw_crashes([(raw_crash(c, t), {}, c) for c, t in zip(ids, times)])
        barrier = threading.Barrier(8)

        def process(chunk):
            barrier.wait()
            for cid in chunk:
                store.save_processed(processed(cid, "hot" if cid[0] in "02468ace" else "cold"))

        threads = [threading.Thread(target=process, args=(ids[i::8],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for hour in ("12", "13", "14"):
            assert store.get_metrics(f"2016-09-18T{hour}")["unique_crash_signatures"] == 2
        assert store.get_metrics("2016-09-18")["unique_crash_signatures"] == 2
        assert store.get_metrics("2016")["unique_crash_signatures"] == 2
        assert store.get_signature_counters("hot")["daily_2016-09-18"] == 8


def test_a_failed_counter_update_does_not_fail_a_stored_crash(embedded_url, monkeypatch):
    """The crash is stored before its counters: a counter failure is logged, not raised, so the
    caller does not retry the save (which would count it twice); rollup repairs the count."""
    from socorro_store.errors import BackendUnavailable

    with open_store(embedded_url) as store:
        store.create_tables()
        counted_live(store)  # live increments (a cut-over store's counts are derived from the row)
        cid = crash_id("b")

        def unavailable(increments):
            raise BackendUnavailable("injected: increment reply lost")

        monkeypatch.setattr(store.backend, "increment_many", unavailable)
        before = store.live_counters.failures["increments"]
        store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": b"MDMP"}, cid)
        assert store.live_counters.failures["increments"] > before
        monkeypatch.undo()
        assert store.get_raw_dump(cid) == b"MDMP"
        assert list(store.new_crashes()) == [cid]
        assert store.get_metrics("2016") == {}


def test_a_failed_first_seen_detection_keeps_the_plain_counters(embedded_url, monkeypatch):
    from socorro_store.errors import BackendUnavailable

    with open_store(embedded_url) as store:
        store.create_tables()
        counted_live(store)  # first-seen detection is the live path's (the deriver counts from its counters)
        cid = crash_id("c")
        store.save_raw_crash(raw_crash(cid), {}, cid)
        assert list(store.new_crashes()) == [cid]

        def unavailable(table, items):
            raise BackendUnavailable("injected: append reply lost")

        monkeypatch.setattr(store.backend, "append_many", unavailable)
        before = store.live_counters.failures["detections"]
        store.save_processed(processed(cid, signature="sig"))
        assert store.live_counters.failures["detections"] == before + 1
        assert sum(store.get_signature_counters("sig").values()) == 4  # hour, day, month, year
        assert store.queue_sizes()["standard"] == 0
        assert "unique_crash_signatures" not in store.get_metrics("2016")  # for rollup to repair


def test_known_first_seen_markers_are_not_read_again(store, backend_url):
    """A signature already counted in its intervals by this store costs no first-seen call;
    another store (its own process) still reads the markers and does not count it again."""
    counted_live(store)  # no deriver reading ranking rows of the same table beside the markers
    ids = [crash_id(s) for s in "0123"]
    for i, cid in enumerate(ids):
        store.save_raw_crash(raw_crash(cid, BASE_TIME + timedelta(seconds=i)), {}, cid)
    store.save_processed(processed(ids[0], signature="popular"))
    store.flush_counters()  # first-seen detection runs with the counters (in the background on a remote backend)
    reads = []
    real = store.backend.get_rows
    store.backend.get_rows = lambda table, rows, *a, **k: reads.append(table) or real(table, rows, *a, **k)
    store.save_processed(processed(ids[1], signature="popular"))
    store.flush_counters()
    assert K.SIGNATURES_SEEN not in reads
    store.save_processed(processed(ids[2], signature="rare"))
    store.flush_counters()
    assert reads.count(K.SIGNATURES_SEEN) == 1
    with open_store(backend_url) as other:  # knows no marker: reads them, finds "popular" counted
        other.save_processed(processed(ids[3], signature="popular"))
    hour = K.metrics_row(BASE_TIME, "hour").decode()
    assert store.get_metrics(hour)["unique_crash_signatures"] == 2
