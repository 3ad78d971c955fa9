"""Issue 21, defect 2: names and ids are validated whole (a trailing newline, other scripts'
digits), and one unreadable index row never takes a day's readers down: they skip it, and
``verify-indexes`` reports it (MALFORMED) and repairs it."""

import io
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store.backends import RowMutation
from socorro_store.errors import InvalidArgument, InvalidCrashID
from socorro_store.jobs import scrutiny, transfer
from socorro_store.schema import keys as K
from socorro_store.schema.stored import stored_time
from socorro_store.schema.timeparse import parse_duration

GOOD = crash_id("d")
ARABIC_ONE = "\u0661"  # int("\u0661") == 1


@pytest.mark.parametrize("bad", [GOOD[:-6] + "160111\n", GOOD + "\n", GOOD[:-1] + ARABIC_ONE, GOOD[:-6] + " 60918", GOOD[:-6] + "16091\n"])
def test_crash_ids_are_validated_whole(bad):
    with pytest.raises(InvalidCrashID):
        K.validate_crash_id(bad)
    with pytest.raises(InvalidCrashID):
        K.crash_row_key(bad)
    assert not K.is_crash_id(bad)


@pytest.mark.parametrize("check, bad", [
    (K.validate_dump_name, "flash1\n"), (K.validate_process_type, "plugin\n"), (K.counter_column, "name\n"),
    (K.validate_job_name, "rollup\n"), (K.validate_run_id, "20160918T120000000Z-abcdef\n"),
    (K.validate_run_id, "2016091" + ARABIC_ONE + "T120000000Z-abcdef"),
    (K.parse_key_timestamp, b"2016-09-18T12:00:00.000000\n"), (K.parse_metrics_row, b"2016-09-18\n"),
    (stored_time, b"2016-09-18T12:00:00\n"), (parse_duration, ARABIC_ONE + "s"),
])
def test_names_and_stamps_are_validated_whole(check, bad):
    with pytest.raises(InvalidArgument):
        check(bad)


def test_crash_date_refuses_what_int_would_take():
    for tail in ("16091\n", "1609 1", "16091" + ARABIC_ONE):
        with pytest.raises(ValueError):
            K.crash_date("x" * 30 + tail)


@pytest.mark.parametrize("case", ["id with newline", "ProcessType with newline", "dump name with newline"])
def test_a_save_with_a_newline_in_a_name_is_refused_and_writes_nothing(store, case):
    cid, raw, dumps = GOOD, raw_crash(GOOD), {"upload_file_minidump": b"MDMP"}
    if case == "id with newline":  # as reported: "…160111\n" ends in "60111\n", and int("1\n") == 1
        cid = crash_id("d", day=BASE_TIME.replace(month=1, day=11)) + "\n"
        raw["uuid"] = cid
    elif case == "ProcessType with newline":
        raw["ProcessType"] = "plugin\n"
    else:
        dumps["flash1\n"] = b"F"
    with pytest.raises(InvalidArgument):
        store.save_raw_crash(raw, dumps, cid)
    assert all_rows(store.backend) == {}


def plant_unreadable_rows(backend, moment):
    """What an older version wrote for crash id ``GOOD + "\\n"``: its crash row and pointers, plus
    a pointer in no layout in the signature index and a priority row that is garbage."""
    bad = GOOD[:-6] + "160918\n"
    key = bad[0].encode() + K.format_timestamp(moment) + bad.encode()
    ooid = {K.COL_OOID: bad.encode()}
    backend.mutate_rows(K.CRASH_REPORTS, [RowMutation((bad[0] + bad[-6:] + bad).encode(), {
        K.COL_OOID: bad.encode(), K.COL_SUBMITTED: K.format_timestamp(moment), K.COL_PROCESSED: b"N",
        K.COL_META: b"{}"})])
    for table in (K.SUBMITTED_TIME, K.UNPROCESSED_FLAG):
        backend.mutate_rows(table, [RowMutation(key, dict(ooid))])
    backend.mutate_rows(K.UNPROCESSED_FLAG, [RowMutation(K.PRIORITY_PREFIX + b"0garbage", dict(ooid))])
    backend.mutate_rows(K.SIGNATURE_OOID, [RowMutation(K.signature_prefix("sig") + b"garbage\n", dict(ooid))])
    return key


def test_one_unreadable_row_never_takes_a_days_readers_down(store):
    day = BASE_TIME.replace(hour=0)
    ids = [crash_id(s) for s in "0d8f"]
    for i, cid in enumerate(ids):
        store.save_raw_crash(raw_crash(cid, submitted=BASE_TIME + timedelta(minutes=i)), {}, cid)
    store.save_processed(processed(ids[0], "sig"))
    bad_key = plant_unreadable_rows(store.backend, BASE_TIME + timedelta(seconds=30))
    end = day + timedelta(days=1)

    assert list(store.crashes_submitted(day, end)) == ids
    assert list(store.list_crashes(day, end)) == ids
    assert [c["crash_id"] for c in store.list_crashes(day, end, details=True)] == ids
    assert list(store.crashes_by_signature("sig")) == [ids[0]]
    status = store.queue_status(now=end)
    assert status["queues"]["standard"]["indexed"] == 3 and status["queues"]["priority"]["indexed"] == 0
    out = io.BytesIO()
    assert transfer.export_crashes(store.backend, day, end, out)["crashes"] == 4
    assert sorted(store.new_crashes(limit=10)) == sorted(ids[1:])

    report = scrutiny.verify_indexes(store.backend)  # reported, not raised
    assert report[K.SUBMITTED_TIME]["malformed"] == 1 and report[K.SUBMITTED_TIME]["unreadable"] == 1
    assert report[K.UNPROCESSED_FLAG]["malformed"] == 2 and report[K.SIGNATURE_OOID]["malformed"] == 1
    assert all(t["malformed"] <= t["orphan"] for t in report.values())
    scrutiny.verify_indexes(store.backend, repair=True, orphan_age_s=0)
    after = scrutiny.verify_indexes(store.backend)
    assert all(t["malformed"] == 0 for t in after.values()), after
    assert store.backend.get_rows(K.SUBMITTED_TIME, [bad_key]) == {}
