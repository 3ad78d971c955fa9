"""A store holding crashes written by Socorro's own HBase code (issue 15).

The rows are written in Socorro's exact formats with plain puts and increments (happybase against
the gateway, as Socorro's code did, and the backend contract for the embedded engine); then the
migration of the README is followed: readable, processable, listed by time and by signature after
``verify-indexes --repair``, and counted by rollup without losing Socorro's own counters.
"""

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner
from socorro_rows import BackendWriter, HappybaseWriter, socorro_process, socorro_submit

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.cli import main
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import rollup, scrutiny
from socorro_store.schema import keys as K
from socorro_store.schema import stored

UTC = timezone.utc
DAY = datetime(2016, 9, 18, tzinfo=UTC)
UNTIL = "2016-10-02T00:00:00Z"  # closes September


def cid(salt, n):
    return f"{salt}{n:07x}-0000-4000-8000-00000" + "2160918"  # depth 2, 2016-09-18


CRASHES = {  # name: (crash id, submitted)
    "legacy": (cid("a", 1), datetime(2016, 9, 18, 12, 34, 56, 123456, tzinfo=UTC)),
    "whole_second": (cid("b", 2), datetime(2016, 9, 18, 12, 35, 7, tzinfo=UTC)),  # 19-char key times
    "processed": (cid("c", 3), datetime(2016, 9, 18, 13, 0, 1, 500000, tzinfo=UTC)),
    "processed_prefix": (cid("c", 4), datetime(2016, 9, 18, 13, 0, 2, 250000, tzinfo=UTC)),
    "happybase": (cid("d", 5), datetime(2016, 9, 18, 14, 10, 0, 250000, tzinfo=UTC)),  # no index rows
}


@pytest.fixture(params=["embedded", "gateway-framed-compact", "hbase-real"])
def backend_kind(request):
    return request.param


@pytest.fixture
def socorro_store(backend_url, backend_kind):
    """A store whose tables hold only what Socorro's code wrote."""
    with open_store(backend_url) as store:
        store.create_tables()
        writer = BackendWriter(store.backend) if backend_kind == "embedded" else HappybaseWriter(backend_url)
        try:
            ids = {name: c for name, (c, _t) in CRASHES.items()}
            at = {name: t for name, (_c, t) in CRASHES.items()}
            socorro_submit(writer, ids["legacy"], at["legacy"], legacy_zero=True, hang="hang-1", process_type="plugin")
            socorro_submit(writer, ids["whole_second"], at["whole_second"])
            socorro_submit(writer, ids["processed"], at["processed"])
            socorro_submit(writer, ids["processed_prefix"], at["processed_prefix"])
            socorro_process(writer, ids["processed"], at["processed"], "js::Foo")
            socorro_process(writer, ids["processed_prefix"], at["processed_prefix"], "js::Foo::Bar")
            socorro_submit(writer, ids["happybase"], at["happybase"], happybase_storage=True)
        finally:
            writer.close()
        yield store, ids


def _day_counter(store, row=b"2016-09-18"):
    return store.get_metrics(row).get("submitted_crash_reports")


def test_socorro_rows_are_read_as_written(socorro_store):
    store, ids = socorro_store
    legacy = store.get_processing_state(ids["legacy"])
    assert legacy["submitted"] == "2016-09-18T12:34:56.123456" and legacy["legacy_processing"] == 0
    assert legacy["queues"] == ["legacy", "standard"] and not legacy["processed"]
    whole = store.get_processing_state(ids["whole_second"])
    assert whole["submitted"] == "2016-09-18T12:35:07.000000" and whole["queues"] == ["standard"]
    done = store.get_processing_state(ids["processed"])
    assert done["processed"] and done["signature"] == "js::Foo" and done["queues"] == []
    assert done["processed_at"] == "2016-09-18T13:05:01.500000"
    assert store.get_processing_state(ids["happybase"])["legacy_processing"] is None
    # listed by time, both key lengths, in submission order; the happybase crash has no pointer yet
    listed = list(store.crashes_submitted(DAY, "2016-09-19"))
    assert listed == [ids["legacy"], ids["whole_second"], ids["processed"], ids["processed_prefix"]]
    assert list(store.crashes_submitted("2016-09-18T12:35:07Z", "2016-09-18T12:35:08Z")) == [ids["whole_second"]]
    assert list(store.crashes_submitted("2016-09-18T12:35:07.5Z", "2016-09-18T12:36:00Z")) == []
    # Socorro's queue counters, and its interval counters
    assert store.get_metrics("crash_report_queue") == {"current_unprocessed_size": 2,
                                                       "current_legacy_unprocessed_size": 1}
    assert _day_counter(store) == 4
    for bad in ("", "with space", "tab\there", b"\xff\xfe", "x" * 300, 7):
        with pytest.raises(InvalidArgument):
            store.get_metrics(bad)
    assert store.get_raw_crash(ids["happybase"])["uuid"] == ids["happybase"]
    # a priority request on a crash Socorro processed: its state is read, the request queued
    assert store.enqueue_priority([ids["processed"]]) == 1
    assert store.get_processing_state(ids["processed"])["queues"] == ["priority"]


def test_rollup_never_destroys_socorro_counters(socorro_store):
    store, _ids = socorro_store
    before = {row: store.get_metrics(row) for row in (b"2016-09-18", b"2016-09-18T14", b"2016-09", b"2016")}
    report = rollup.run_rollup(store.backend, until=UNTIL)
    # the happybase crash has no pointer: its minute, hour and day are left alone, and said so
    assert report["kept_intervals"] > 0 and "2016-09-18" in report["kept_examples"]
    assert "2016-09-18T14" in report["kept_examples"]
    assert {row: store.get_metrics(row) for row in (b"2016-09-18", b"2016-09-18T14")} == \
        {row: before[row] for row in (b"2016-09-18", b"2016-09-18T14")}
    # accounted intervals are exact (they agree with what Socorro counted)
    assert store.get_metrics("2016-09-18T12:34")["submitted_crash_reports"] == 1
    assert store.get_metrics("2016-09-18T12:34")["submitted_crash_reports_legacy_throttle_0"] == 1
    assert store.get_metrics("2016-09-18T12")["submitted_crash_reports"] == 2
    assert store.get_metrics("2016-09")["submitted_crash_reports"] == 4  # sums the kept day
    kept_day = store.backend.get_row(K.METRICS, b"2016-09-18", columns=[rollup.COL_ROLLED_UP])
    assert kept_day == {}  # not marked: expiry keeps its detail


def test_migration_repair_process_count(socorro_store, backend_url):
    store, ids = socorro_store
    backend = store.backend
    assert list(store.crashes_by_signature("js::Foo")) == []  # Socorro's signature rows are not ours
    report = scrutiny.verify_indexes(backend)
    assert report[K.SIGNATURE_OOID]["foreign"] == 2 and report[K.SIGNATURE_OOID]["orphan"] == 0
    assert report[K.HANG_ID_SUBMITTED_TIME]["foreign"] == 1
    assert report[K.SUBMITTED_TIME]["valid"] == 4 and report[K.SUBMITTED_TIME]["missing"] == 1
    assert report[K.UNPROCESSED_FLAG]["valid"] == 2 and report[K.UNPROCESSED_FLAG]["missing"] == 1
    assert report[K.SIGNATURE_OOID]["missing"] == 2
    # the README's migration: repair over the date range, reconcile the queue, roll up
    runner = CliRunner()
    url = ["--url", backend_url]
    repaired = runner.invoke(main, url + ["verify-indexes", "--repair", "--since", "2016-09-18", "--until",
                                          "2016-09-19", "--json"])
    assert repaired.exit_code == 1, repaired.output  # it found MISSING pointers (and wrote them)
    assert json.loads(repaired.stdout)[K.SUBMITTED_TIME]["repaired_missing"] == 1
    verified = runner.invoke(main, url + ["verify-indexes"])
    assert verified.exit_code == 0, verified.output
    assert "FOREIGN=2" in verified.output
    assert runner.invoke(main, url + ["reconcile-queue"]).exit_code == 0
    assert store.queue_sizes()["standard"] == 3 and store.queue_sizes()["legacy"] == 1
    # every crash is listed by time and by signature (and "js::Foo" never matches "js::Foo::Bar")
    assert len(list(store.crashes_submitted(DAY, "2016-09-19"))) == 5
    assert list(store.crashes_by_signature("js::Foo")) == [ids["processed"]]
    assert list(store.crashes_by_signature("js::Foo::Bar")) == [ids["processed_prefix"]]
    # our processor processes Socorro's backlog to the end
    taken = list(store.new_crashes())
    assert sorted(taken) == sorted([ids["legacy"], ids["whole_second"], ids["happybase"]])
    for crash_id in taken:
        store.save_processed({"uuid": crash_id, "completeddatetime": "2016-09-18T15:00:00Z",
                              "signature": "sig::" + crash_id[0], "success": True})
    store.flush_counters()
    for crash_id in taken:
        state = store.get_processing_state(crash_id)
        assert state["processed"] and state["queues"] == []
    assert list(store.new_crashes()) == [] and list(store.new_crashes(queue="legacy")) == []
    # counted: every crash, now that each is accounted for
    result = runner.invoke(main, url + ["rollup", "--until", UNTIL, "--since", "2016-09-18", "--json"])
    assert result.exit_code == 0, result.output
    counted = json.loads(result.stdout)
    assert counted["kept_intervals"] == 0 and counted["crashes_read"] == 5
    assert _day_counter(store) == 5 and store.get_metrics("2016-09")["submitted_crash_reports"] == 5
    assert store.get_metrics("2016-09-18")["submitted_oop_plugin_crash_reports"] == 1
    assert store.get_signature_counters("js::Foo")["daily_2016-09-18"] == 1
    # --drop-foreign removes Socorro's rows once ours exist
    dropped = scrutiny.run_verify_indexes(backend, repair=True, drop_foreign=True)
    assert dropped[K.SIGNATURE_OOID]["dropped_foreign"] == 2
    final = scrutiny.verify_indexes(backend)
    assert all(t["foreign"] == 0 and t["missing"] == 0 and t["orphan"] == 0 for t in final.values()), final
    assert list(store.crashes_by_signature("js::Foo")) == [ids["processed"]]


def test_unreadable_crash_row_is_kept_and_reported(embedded_url):
    with open_store(embedded_url) as store:
        store.create_tables()
        writer = BackendWriter(store.backend)
        crash_id, at = CRASHES["legacy"]
        socorro_submit(writer, crash_id, at)
        row = K.crash_row_key(crash_id)
        store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(row, {K.COL_SUBMITTED: b"yesterday-ish"})])
        before = store.get_metrics("2016-09-18T12:34")
        report = rollup.run_rollup(store.backend, until=UNTIL)
        assert report["unreadable_rows"] >= 1 and report["unreadable_examples"][0]["crash_id"] == crash_id
        assert store.get_metrics("2016-09-18T12:34") == before == {"submitted_crash_reports": 1}
        assert _day_counter(store) == 1
        checked = scrutiny.verify_indexes(store.backend, repair=True, orphan_age_s=0)
        assert checked[K.SUBMITTED_TIME]["unreadable"] >= 1 and checked[K.SUBMITTED_TIME]["deleted_orphans"] == 0
        assert store.backend.get_rows(K.SUBMITTED_TIME, [(crash_id[0] + at.isoformat()[:-6] + crash_id).encode()])


@pytest.mark.parametrize("raw, expected", [
    (b"2016-09-18T12:34:56.123456", datetime(2016, 9, 18, 12, 34, 56, 123456, tzinfo=UTC)),
    (b"2016-09-18T12:34:56.123456+00:00", datetime(2016, 9, 18, 12, 34, 56, 123456, tzinfo=UTC)),
    (b"2016-09-18T12:34:56+00:00", datetime(2016, 9, 18, 12, 34, 56, tzinfo=UTC)),
    (b"2016-09-18T14:34:56.5+02:00", datetime(2016, 9, 18, 12, 34, 56, 500000, tzinfo=UTC)),
    (b"2016-09-18 12:34:56.123456", datetime(2016, 9, 18, 12, 34, 56, 123456, tzinfo=UTC)),
    (b"2016-09-18T12:34:56Z", datetime(2016, 9, 18, 12, 34, 56, tzinfo=UTC)),
    (b"2016-09-18T12:34:56", datetime(2016, 9, 18, 12, 34, 56, tzinfo=UTC)),
])
def test_stored_times_in_every_writer_form(raw, expected):
    assert stored.stored_time(raw) == expected


@pytest.mark.parametrize("raw", [b"", b"yesterday", b"2016-09-18", b"2016-13-18T00:00:00", b"\xff", None, 5])
def test_unreadable_stored_times_are_refused(raw):
    with pytest.raises(InvalidArgument):
        stored.stored_time(raw)


def test_stored_flags_and_key_forms():
    assert [stored.stored_legacy(v) for v in (b"0", b"1", b"2", b"Y", None, b"", b"N")] == [0, 1, 2, 0, None, None, None]
    crash_id, at = CRASHES["whole_second"]
    ours, socorros = stored.time_index_key_forms(crash_id, at)
    assert socorros == (crash_id[0] + at.isoformat()[:-6] + crash_id).encode() and len(ours) == len(socorros) + 7
    assert stored.parse_stored_time_index_key(socorros) == stored.parse_stored_time_index_key(ours) == (crash_id, at)
    assert stored.canonical_time_index_key(socorros) == ours
    assert stored.time_index_key_forms(*CRASHES["legacy"]) == [K.time_index_key(*CRASHES["legacy"])]
    with pytest.raises(InvalidArgument):
        stored.parse_stored_time_index_key(b"x" + socorros[1:])  # salt differs from the crash id
    assert stored.parse_socorro_signature_key(b"js::Foo" + crash_id.encode()) == ("js::Foo", crash_id)
