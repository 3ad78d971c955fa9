"""verify-indexes (VALID / MISSING / ORPHAN per index table, --repair) and reconcile-queue."""

import pytest
from jobs_helpers import ingest, make_crashes
from store_helpers import queue_table_left

from socorro_store import open_store
from socorro_store.backends import Increment, RowMutation
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import runs as jobs
from socorro_store.jobs import scrutiny
from socorro_store.schema import keys as K


@pytest.fixture
def loaded(backend_url, prebuilt_tables):
    with open_store(backend_url) as store:
        store.create_tables()
        specs = make_crashes(30)
        ingest(store, specs)
        yield store.backend, specs


FOREIGN = "f0000000-0000-0000-0000-000000" + "2161231"[-7:]


def test_clean_store_is_all_valid(loaded):
    backend, specs = loaded
    report = scrutiny.verify_indexes(backend)
    assert all(t["missing"] == 0 and t["orphan"] == 0 for t in report.values())
    assert report[K.SUBMITTED_TIME]["valid"] == len(specs)
    assert report[K.SIGNATURE_OOID]["valid"] == sum(s["processed"] for s in specs)
    assert report[K.UNPROCESSED_FLAG]["valid"] == sum(not s["processed"] for s in specs)
    assert report[K.HANG_ID]["valid"] == 6 and len(report) == 7


def test_damage_is_counted_exactly_and_repaired(loaded):
    backend, specs = loaded
    victims = [s for s in specs if not s["processed"]][:2]
    processed = [s for s in specs if s["processed"]][:3]
    # MISSING: delete pointers of existing crashes
    for spec in victims:
        key = K.time_index_key(spec["id"], spec["submitted"])
        backend.mutate_rows(K.SUBMITTED_TIME, [RowMutation(key, delete_row=True)])
        backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(key, delete_row=True)])
    for spec in processed:
        key = K.signature_index_key(K.signature_name(spec["signature"]), spec["submitted"], spec["id"])
        backend.mutate_rows(K.SIGNATURE_OOID, [RowMutation(key, delete_row=True)])
    # ORPHAN: pointers to a crash that does not exist, and a queue pointer of a processed crash
    ghost = "e" + specs[0]["id"][1:]
    ghost_key = K.time_index_key(ghost, specs[0]["submitted"])
    backend.mutate_rows(K.SUBMITTED_TIME, [RowMutation(ghost_key, {K.COL_OOID: ghost.encode()})])
    backend.mutate_rows(K.SIGNATURE_OOID, [RowMutation(K.signature_index_key("x", specs[0]["submitted"], ghost),
                                                       {K.COL_OOID: ghost.encode()})])
    backend.mutate_rows(K.HANG_ID, [RowMutation(b"hang-0", {b"ids:ooid:content": ghost.encode()})])
    done = processed[0]
    backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(K.time_index_key(done["id"], done["submitted"]),
                                                         {K.COL_OOID: done["id"].encode()})])
    report = scrutiny.verify_indexes(backend)
    assert report[K.SUBMITTED_TIME]["missing"] == 2 and report[K.SUBMITTED_TIME]["orphan"] == 1
    assert report[K.UNPROCESSED_FLAG]["missing"] == 2 and report[K.UNPROCESSED_FLAG]["orphan"] == 1
    assert report[K.SIGNATURE_OOID]["missing"] == 3 and report[K.SIGNATURE_OOID]["orphan"] == 1
    assert report[K.HANG_ID]["orphan"] == 1 and report[K.HANG_ID]["missing"] == 0
    assert report[K.LEGACY_SUBMITTED_TIME] == {**dict.fromkeys(scrutiny.COUNTS, 0),
                                               "valid": report[K.LEGACY_SUBMITTED_TIME]["valid"]}
    # young orphans are kept (a save may be in flight); old ones go
    young = scrutiny.verify_indexes(backend, repair=True)
    assert young[K.SUBMITTED_TIME]["repaired_missing"] == 2 and young[K.SUBMITTED_TIME]["deleted_orphans"] == 0
    result = scrutiny.run_verify_indexes(backend, repair=True, orphan_age_s=0)
    assert result[K.SUBMITTED_TIME]["deleted_orphans"] == 1
    final = scrutiny.verify_indexes(backend)
    assert all(t["missing"] == 0 and t["orphan"] == 0 for t in final.values()), final
    assert backend.get_row(K.HANG_ID, b"hang-0", columns=[b"ids:ooid:content"]) == {}
    # the repaired queue pointers make the crashes processable again
    store_ids = {v["id"] for v in victims}
    assert store_ids <= set(open_store.__globals__["CrashStore"](backend).new_crashes())
    assert jobs.list_runs(backend, "verify-indexes")[0].status == jobs.SUCCEEDED


def test_reconcile_queue(loaded):
    backend, specs = loaded
    waiting = sum(not s["processed"] for s in specs)
    legacy = sum(not s["processed"] and s["legacy"] == 0 for s in specs)
    backend.increment_many([Increment(K.METRICS, K.QUEUE_ROW, b"counters:inserts_unprocessed", 7),
                            Increment(K.METRICS, K.QUEUE_ROW, b"counters:deletes_unprocessed_legacy", -3)])
    result = scrutiny.run_reconcile_queue(backend)
    assert result["before"]["standard"] == waiting + 7 and result["after"]["standard"] == waiting
    sizes = open_store.__globals__["CrashStore"](backend).queue_sizes()
    assert sizes["standard"] == waiting and sizes["legacy"] == legacy and sizes["priority"] == 0
    assert scrutiny.run_reconcile_queue(backend)["corrected"] == 0


def test_bad_threshold_is_refused(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        with pytest.raises(InvalidArgument):
            scrutiny.run_verify_indexes(store.backend, orphan_age_s=-1)
        assert list(store.backend.scan(K.JOBS)) == []


@pytest.mark.parametrize("cut_over", [True, False], ids=["derived", "live"])
def test_repair_does_not_requeue_a_crash_processed_during_the_check(embedded_url, cut_over):
    from jobs_helpers import processed_of, raw_of
    from store_helpers import counted_live

    spec = make_crashes(10)[9]
    with open_store(embedded_url) as store:
        store.create_tables()
        if not cut_over:
            counted_live(store)
        spec["hang"] = None
        store.save_raw_crash(raw_of(spec), {}, spec["id"])
        processed_during_check = []

        def heartbeat():
            if not processed_during_check:  # right after the crash rows were read
                store.save_processed(processed_of(spec))
                processed_during_check.append(True)

        report = scrutiny.verify_indexes(store.backend, repair=True, heartbeat=heartbeat)
        assert processed_during_check
        if cut_over:  # the save left the pointer to the deriver: none was missing
            assert report[K.UNPROCESSED_FLAG]["missing"] == 0
            store.settle()
        else:
            assert report[K.UNPROCESSED_FLAG]["missing"] == 1  # seen as missing by the scan...
        assert report[K.UNPROCESSED_FLAG]["repaired_missing"] == 0  # ...but not written back
        assert queue_table_left(store.backend) == ([], True)


def test_verify_indexes_reports_progress(loaded):
    backend, _specs = loaded  # crashes of 2016-12-30 to 2017-01-01
    seen = []
    scrutiny.run_verify_indexes(backend, progress=lambda phase, done, total: seen.append((phase, done, total)))
    assert seen[0] == ("crash rows", 1, 1) and seen[-1] == ("indexes", 7, 7)
    assert [done for phase, done, _t in seen if phase == "indexes"] == list(range(1, 8))
    seen.clear()
    scrutiny.run_verify_indexes(backend, since="2016-09-18", until="2017-01-05",
                                progress=lambda phase, done, total: seen.append((phase, done, total)))
    days = len({spec["submitted"].date() for spec in _specs})  # only the days holding data are read
    assert [s for s in seen if s[0] == "days"] == [("days", n, days) for n in range(1, days + 1)]


def test_verify_since_walks_only_days_with_data(embedded_url):
    """Issue 32, defect 12: ``--since`` far back on a store holding a few crashes costs the days
    that hold data, not 16 scans for every calendar day since (5 minutes through serve)."""
    with open_store(embedded_url) as store:
        store.create_tables()
        specs = make_crashes(8)
        ingest(store, specs)
        calls = store.backend.calls.copy()
        report = scrutiny.verify_indexes(store.backend, since="2001-01-01", until="2017-01-05")
        scans = store.backend.calls["scan"] - calls["scan"]
        assert report[K.SUBMITTED_TIME]["valid"] == 8 and report[K.SUBMITTED_TIME]["missing"] == 0
        assert scans < 1000, scans  # 16 salts x 5,843 days walked: 93,488


def test_crash_row_under_another_crashs_key_is_unreadable_in_both_paths(embedded_url):
    """Issue 39: the whole-table check judged a crash row by its ``ids:ooid`` whatever its key (and
    so reported, for a copy under another key, pointers --repair could never write); a day range
    judged only rows under its days.  Both now judge the key: such a row is UNREADABLE, kept."""
    with open_store(embedded_url) as store:
        store.create_tables()
        spec = make_crashes(10)[9]  # no hang pair
        ingest(store, [spec])
        other = ("b" if spec["id"][0] != "b" else "c") + spec["id"][1:]  # a key in no layout of its crash id
        cells = store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(spec["id"]))
        store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(other), cells)])
        day = spec["id"][-6:]
        since = f"20{day[:2]}-{day[2:4]}-{day[4:]}"
        whole = scrutiny.verify_indexes(store.backend)
        assert whole == scrutiny.verify_indexes(store.backend, since=since)
        assert whole[K.SUBMITTED_TIME]["unreadable"] == 1 and scrutiny.problems_left(whole) == 1
        repaired = scrutiny.verify_indexes(store.backend, repair=True, orphan_age_s=0)
        assert sum(t["repaired_missing"] + t["deleted_orphans"] for t in repaired.values()) == 0
        assert store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(other))[K.COL_OOID] == spec["id"].encode()
