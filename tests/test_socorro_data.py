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
from socorro_rows import (
    BackendWriter,
    HappybaseWriter,
    SOCORRO_DAYS,
    socorro_2013_put_json_dump,
    socorro_2016_new_crashes,
    socorro_2016_save_processed,
    socorro_days_written,
    socorro_process,
    socorro_submit,
)
from store_helpers import counted_live

from socorro_store import open_store
from socorro_store.backends import RowMutation
from socorro_store.cli import main
from socorro_store.crashstore import listings
from socorro_store.errors import InvalidArgument
from socorro_store.jobs import rollup, scrutiny
from socorro_store.schema import keys as K
from socorro_store.schema import stored

# Every store here is opened on backend_url and its tables created first: on a real HBase,
# a prefix that already holds them, emptied (conftest.prebuilt_tables).
pytestmark = pytest.mark.usefixtures("prebuilt_tables")

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
        counted_live(store)  # beside Socorro's code, which increments the same counters, counting stays live
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
        store.flush_counters()
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
    # Socorro's signature rows are read live, before any repair ("js::Foo" never matches "js::Foo::Bar")
    assert list(store.crashes_by_signature("js::Foo")) == [ids["processed"]]
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
    assert repaired.exit_code == 0, repaired.output  # it found MISSING pointers and wrote them all
    assert json.loads(repaired.stdout)[K.SUBMITTED_TIME]["repaired_missing"] == 1
    verified = runner.invoke(main, url + ["verify-indexes"])
    assert verified.exit_code == 0, verified.output
    assert "FOREIGN=2" in verified.output and "FOREIGN=1" in verified.output  # signatures; the hang row
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
    assert dropped[K.HANG_ID_SUBMITTED_TIME]["dropped_foreign"] == 1
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

# -- issue 22: Socorro side by side --------------------------------------------------------------


def _writer(store, backend_kind, backend_url):
    return BackendWriter(store.backend) if backend_kind == "embedded" else HappybaseWriter(backend_url)


def _ours(store, crash_id, at, legacy=False, signature=None):
    """Save a crash with socorro-store (and process it when ``signature`` is given)."""
    raw = {"ProductName": "Firefox", "submitted_timestamp": at.isoformat(), "uuid": crash_id}
    if legacy:
        raw["legacy_processing"] = 0
    store.save_raw_crash(raw, {}, crash_id)
    if signature is not None:
        _process(store, crash_id, signature)


def _process(store, crash_id, signature):
    store.save_processed({"uuid": crash_id, "completeddatetime": "2016-09-18T23:00:00Z",
                          "signature": signature, "success": True})


def _socorro_processed(crash_id, signature):
    return {"uuid": crash_id, "signature": signature, "success": True,
            "completeddatetime": "2016-09-18 23:00:00.000000"}


def test_signature_listing_reads_socorros_index_live(socorro_store, backend_kind, backend_url):
    """Item 1: Socorro's ``signature + crash_id`` rows, merged with ours, in submission order, once."""
    store, ids = socorro_store
    before, after = cid("e", 6), cid("1", 7)
    _ours(store, before, datetime(2016, 9, 18, 12, 50, tzinfo=UTC), signature="js::Foo")
    _ours(store, after, datetime(2016, 9, 18, 13, 30, tzinfo=UTC), signature="js::Foo")
    assert list(store.crashes_by_signature("js::Foo")) == [before, ids["processed"], after]
    assert list(store.crashes_by_signature("js::Foo", "2016-09-18T12:55Z", "2016-09-18T13:10Z")) == [ids["processed"]]
    assert list(store.crashes_by_signature("js::Foo", "2016-09-18T13:00:01.5Z", "2016-09-18T13:00:01.500001Z")) \
        == [ids["processed"]]
    assert list(store.crashes_by_signature("js::Foo::Bar")) == [ids["processed_prefix"]]
    # after --repair our pointer stands beside Socorro's: listed once
    scrutiny.verify_indexes(store.backend, repair=True)
    assert list(store.crashes_by_signature("js::Foo")) == [before, ids["processed"], after]
    # Socorro processes a crash after the repair: visible at once, in its place
    writer = _writer(store, backend_kind, backend_url)
    try:
        socorro_2016_save_processed(writer, _socorro_processed(ids["whole_second"], "js::Foo"))
    finally:
        writer.close()
    assert list(store.crashes_by_signature("js::Foo")) == [ids["whole_second"], before, ids["processed"], after]
    # reprocessed by us under another signature: Socorro's old row is stale and skipped
    _process(store, ids["processed"], "js::Other")
    assert list(store.crashes_by_signature("js::Foo")) == [ids["whole_second"], before, after]
    assert list(store.crashes_by_signature("js::Other")) == [ids["processed"]]


def _spent(store, action):
    before = dict(store.backend.calls)
    action()
    return {kind: n - before.get(kind, 0) for kind, n in store.backend.calls.items() if n != before.get(kind, 0)}


def _scans_opened(spent):
    return spent.get("scan_open", spent.get("scan", 0))


def test_signature_listing_costs_one_scan_more_without_socorro_rows(backend_url):
    """Item 1, the cost: on a store with none of Socorro's rows, reading Socorro's layout too is
    one scan that finds nothing; nothing else is added."""
    with open_store(backend_url) as store:
        store.create_tables()
        for n in range(5):
            _ours(store, cid("0123456789"[n], 20 + n), datetime(2016, 9, 18, 10, n, tzinfo=UTC), signature="js::Foo")
        _ours(store, cid("a", 30), datetime(2016, 9, 18, 10, 9, tzinfo=UTC), signature="js::Foo0")  # in that scan's range
        store.flush_counters()  # the saves' counters are sent (in the background on a remote backend)
        merged = _spent(store, lambda: list(store.crashes_by_signature("js::Foo")))
        stored_name = b"js::Foo"
        ours_only = _spent(store, lambda: list(listings._our_signature_pointers(
            store.backend, "js::Foo", stored_name, None, None, 1000)))
        print(f"\ncrashes_by_signature, no Socorro rows: {merged}; our index alone: {ours_only}")
        assert _scans_opened(merged) == _scans_opened(ours_only) + 1
        assert {k: v for k, v in merged.items() if not k.startswith("scan")} == \
            {k: v for k, v in ours_only.items() if not k.startswith("scan")}
        # with Socorro's rows: that scan, plus one get of their crash rows per page
        writer = BackendWriter(store.backend) if backend_url.startswith("embedded") else HappybaseWriter(backend_url)
        try:
            crash_id, at = cid("b", 40), datetime(2016, 9, 18, 10, 7, tzinfo=UTC)
            socorro_submit(writer, crash_id, at)
            socorro_2016_save_processed(writer, _socorro_processed(crash_id, "js::Foo"))
        finally:
            writer.close()
        with_socorro = _spent(store, lambda: list(store.crashes_by_signature("js::Foo")))
        print(f"crashes_by_signature, 1 Socorro row: {with_socorro}")
        assert _scans_opened(with_socorro) == _scans_opened(ours_only) + 1
        assert with_socorro.get("get_rows", 0) == ours_only.get("get_rows", 0) + 1
        assert list(store.crashes_by_signature("js::Foo")) == [cid("0123456789"[n], 20 + n) for n in range(5)] + [crash_id]


def test_time_windows_hold_every_key_form_in_order(backend_url, backend_kind):
    """Item 2: 19- and 26-character keys of one second, at any ``end``, in submission order."""
    second = datetime(2016, 9, 18, 12, 35, tzinfo=UTC)
    theirs_w, ours_w = cid("2", 50), cid("9", 51)  # both at 12:35:00.000000
    ours_q, theirs_h = cid("1", 52), cid("0", 53)  # 12:35:00.25 (ours), 12:35:00.5 (Socorro's, 26 chars)
    with open_store(backend_url) as store:
        store.create_tables()
        writer = _writer(store, backend_kind, backend_url)
        try:
            socorro_submit(writer, theirs_w, second)
            socorro_submit(writer, theirs_h, second.replace(microsecond=500000))
        finally:
            writer.close()
        _ours(store, ours_w, second)
        _ours(store, ours_q, second.replace(microsecond=250000))

        def listed(start, end):
            return list(store.crashes_submitted(start, end))

        assert listed(second, second.replace(second=1)) == [theirs_w, ours_w, ours_q, theirs_h]
        assert listed("2016-09-18T12:00Z", "2016-09-18T12:35:00.5Z") == [theirs_w, ours_w, ours_q]
        assert listed(second, "2016-09-18T12:35:00.000001Z") == [theirs_w, ours_w]
        assert listed("2016-09-18T12:34:59.9Z", "2016-09-18T12:35:00.1Z") == [theirs_w, ours_w]
        assert listed("2016-09-18T12:35:00.000001Z", "2016-09-18T12:36Z") == [ours_q, theirs_h]
        assert listed("2016-09-18T12:34Z", second) == []
        # --repair writes our 26-character pointer beside Socorro's 19-character one: listed once
        report = scrutiny.verify_indexes(store.backend, repair=True)
        assert report[K.SUBMITTED_TIME]["missing"] == 0  # Socorro's key form is the pointer
        store.backend.mutate_rows(K.SUBMITTED_TIME, [RowMutation(K.time_index_key(theirs_w, second),
                                                                 {K.COL_OOID: theirs_w.encode()})])
        assert listed(second, "2016-09-18T12:35:00.000001Z") == [theirs_w, ours_w]
        assert listed(second, second.replace(second=1)) == [theirs_w, ours_w, ours_q, theirs_h]


def test_queue_counters_move_only_for_pointers_this_save_deleted(backend_url, backend_kind):
    """Item 3: Socorro's new_crashes() took the legacy pointers; our save deletes none of them."""
    with open_store(backend_url) as store:
        store.create_tables()
        counted_live(store)  # beside Socorro's code the counters stay live (docs/derivation.md)
        crashes = [(cid("3", 60 + n), datetime(2016, 9, 18, 9, n, 1, 1000, tzinfo=UTC)) for n in range(2)]
        writer = _writer(store, backend_kind, backend_url)
        try:
            for crash_id, at in crashes:
                socorro_submit(writer, crash_id, at, legacy_zero=True)
            assert sorted(socorro_2016_new_crashes(writer, 10)) == sorted(c for c, _t in crashes)
        finally:
            writer.close()
        scrutiny.reconcile_queue(store.backend)
        assert {k: store.queue_sizes()[k] for k in ("standard", "legacy")} == {"standard": 2, "legacy": 0}
        taken = list(store.new_crashes())
        assert sorted(taken) == sorted(c for c, _t in crashes)
        for crash_id in taken:
            _process(store, crash_id, "sig::q")
            _process(store, crash_id, "sig::q")  # a second save deletes nothing, counts nothing
        store.flush_counters()
        sizes = store.queue_sizes()
        assert (sizes["standard"], sizes["legacy"], sizes["processed_legacy"]) == (0, 0, 2)
        assert scrutiny.count_queues(store.backend) == {"standard": 0, "legacy": 0, "priority": 0}


def test_scrutiny_judges_hang_rows_in_both_layouts(backend_url, backend_kind):
    """Item 4: Socorro's ``hang_id[0] + ts + hang_id`` rows (``ids:ooid:<ProcessType>``) are FOREIGN,
    with or without --since (a hang id need not start with a hex digit), and --drop-foreign drops them."""
    with open_store(backend_url) as store:
        store.create_tables()
        at = datetime(2016, 9, 18, 8, 0, 0, 120000, tzinfo=UTC)
        writer = _writer(store, backend_kind, backend_url)
        try:
            socorro_submit(writer, cid("4", 70), at, hang="7d2b6c1e-0000-4000-8000-000000000001", process_type="plugin")
            socorro_submit(writer, cid("5", 71), at, hang="zz-hang", process_type="plugin")
        finally:
            writer.close()
        raw = {"ProductName": "Firefox", "submitted_timestamp": at.isoformat(), "uuid": cid("6", 72),
               "HangID": "zz-hang"}
        store.save_raw_crash(raw, {}, cid("6", 72))
        for since in (None, "2016-09-18"):
            report = scrutiny.verify_indexes(store.backend, since=since, until="2016-09-19" if since else None)
            hangs = report[K.HANG_ID_SUBMITTED_TIME]
            assert (hangs["foreign"], hangs["valid"], hangs["missing"], hangs["orphan"]) == (2, 1, 2, 0), since
        repaired = scrutiny.verify_indexes(store.backend, repair=True, drop_foreign=True, since="2016-09-18",
                                           until="2016-09-19")
        assert repaired[K.HANG_ID_SUBMITTED_TIME]["dropped_foreign"] == 2
        final = scrutiny.verify_indexes(store.backend)[K.HANG_ID_SUBMITTED_TIME]
        assert (final["foreign"], final["valid"], final["missing"]) == (0, 3, 0)


def _migrate(runner, url, since="2016-09-18", until="2016-09-19"):
    """The documented steps (docs/migrating.md), exit codes of each."""
    steps = [["verify-indexes", "--repair", "--since", since, "--until", until],
             ["reconcile-queue"],
             ["rollup", "--since", since, "--until", UNTIL],
             ["verify-indexes"]]
    results = [runner.invoke(main, url + step) for step in steps]
    return [r.exit_code for r in results], results


def test_migration_steps_end_at_exit_0(socorro_store, backend_kind, backend_url):
    """Item 5: the 2013 client's put_processed_json leaves a young legacy pointer of a processed
    crash; it is stale whatever its age, and the documented steps end at exit 0."""
    store, ids = socorro_store
    writer = _writer(store, backend_kind, backend_url)
    try:  # put_processed_json on the legacy crash, never taken from the legacy queue
        socorro_2016_save_processed(writer, _socorro_processed(ids["legacy"], "js::Legacy"))
    finally:
        writer.close()
    before = scrutiny.verify_indexes(store.backend)
    assert before[K.LEGACY_UNPROCESSED_FLAG]["orphan"] == 1
    codes, results = _migrate(CliRunner(), ["--url", backend_url])
    assert codes == [0, 0, 0, 0], [r.output for r in results]
    assert "FOREIGN=3" in results[3].output  # Socorro's three signature rows, kept
    # a young orphan of a crash that does not exist is kept: --repair says so (exit 1), then 0
    ghost = cid("e", 99)
    store.backend.mutate_rows(K.SUBMITTED_TIME, [RowMutation(K.time_index_key(ghost, DAY), {K.COL_OOID: ghost.encode()})])
    kept = CliRunner().invoke(main, ["--url", backend_url, "verify-indexes", "--repair"])
    assert kept.exit_code == 1, kept.output
    cleared = CliRunner().invoke(main, ["--url", backend_url, "verify-indexes", "--repair", "--orphan-age", "0s"])
    assert cleared.exit_code == 0, cleared.output


def test_problems_left_counts_what_a_repair_could_not_fix():
    table = dict.fromkeys(scrutiny.COUNTS, 0)
    fixed = {"t": {**table, "missing": 3, "repaired_missing": 3, "orphan": 2, "deleted_orphans": 2, "foreign": 5}}
    assert scrutiny.problems_left(fixed, repair=True) == 0 and scrutiny.problems_left(fixed) == 5
    young = {"t": {**fixed["t"], "deleted_orphans": 1}}
    assert scrutiny.problems_left(young, repair=True) == 1
    assert scrutiny.problems_left({"t": {**table, "unreadable": 1}}, repair=True) == 1


ROUNDS = 4


def test_socorro_and_socorro_store_take_turns(backend_url, backend_kind):
    """Item 6: Socorro's 2016 cycle (new_crashes, process, save_processed) and ours take turns on
    the same queues for several rounds; every crash is processed once, listed by time and by
    signature, counted exactly after rollup, and the documented steps end at exit 0."""
    processed, submitted, signature_of = {}, {}, {}
    with open_store(backend_url) as store:
        store.create_tables()
        counted_live(store)  # beside Socorro's code, which increments the same counters, counting stays live
        writer = _writer(store, backend_kind, backend_url)
        try:
            n = 0
            for turn in range(ROUNDS + 2):
                if turn < ROUNDS:  # each side submits three (whole seconds among them: 19-char keys)
                    for side in ("socorro", "ours", "socorro", "ours", "socorro", "ours"):
                        n += 1
                        crash_id = cid("0123456789abcdef"[n % 16], 100 + n)
                        at = datetime(2016, 9, 18, 6, turn, n, 0 if n % 3 == 0 else 1000 * n, tzinfo=UTC)
                        submitted[crash_id] = at
                        if side == "socorro":
                            socorro_submit(writer, crash_id, at, legacy_zero=True)
                        else:
                            _ours(store, crash_id, at, legacy=True)
                for crash_id in list(socorro_2016_new_crashes(writer, 2)):  # Socorro's turn
                    processed[crash_id] = processed.get(crash_id, 0) + 1
                    signature_of[crash_id] = f"sig::{crash_id[0] in '01234567'}"
                    socorro_2016_save_processed(writer, _socorro_processed(crash_id, signature_of[crash_id]))
                for crash_id in store.new_crashes(limit=3 if turn < ROUNDS else None):  # ours
                    processed[crash_id] = processed.get(crash_id, 0) + 1
                    signature_of[crash_id] = f"sig::{crash_id[0] in '01234567'}"
                    _process(store, crash_id, signature_of[crash_id])
        finally:
            writer.close()
        store.flush_counters()
        assert processed == dict.fromkeys(submitted, 1)  # every crash, once, by one side or the other
        in_order = sorted(submitted, key=lambda c: (submitted[c], c))
        assert list(store.crashes_submitted(DAY, "2016-09-19")) == in_order
        for signature in ("sig::True", "sig::False"):
            assert list(store.crashes_by_signature(signature)) == [c for c in in_order if signature_of[c] == signature]
        assert list(store.new_crashes()) == [] and list(store.new_crashes(queue="legacy")) == []
        codes, results = _migrate(CliRunner(), ["--url", backend_url])
        assert codes == [0, 0, 0, 0], [r.output for r in results]
        assert store.get_metrics("2016-09-18")["submitted_crash_reports"] == len(submitted)
        for signature in ("sig::True", "sig::False"):
            expected = sum(1 for c in submitted if signature_of[c] == signature)
            assert store.get_signature_counters(signature)["daily_2016-09-18"] == expected
        sizes = store.queue_sizes()
        assert (sizes["standard"], sizes["legacy"]) == (0, 0)
        assert list(store.crashes_by_signature("sig::True")) == [c for c in in_order if signature_of[c] == "sig::True"]


def test_deleting_a_crash_removes_socorros_rows_naming_it(backend_url, backend_kind):
    """Issue 32, defect 1 (privacy): a deletion (and so expiry) removes Socorro's
    ``signature + crash_id`` pointer and its side of the ``hang_id[0] + time + hang_id`` row,
    keeping the other side's; afterwards no row in any table names the crash."""
    from socorro_store.crashstore.deletion import delete_crashes  # noqa: PLC0415

    with open_store(backend_url) as store:
        store.create_tables()
        gone, kept = cid("7", 80), cid("8", 81)
        at = datetime(2016, 9, 18, 9, 30, 15, 250000, tzinfo=UTC)
        writer = _writer(store, backend_kind, backend_url)
        try:
            socorro_submit(writer, gone, at, hang="hang-same-ts", process_type="plugin")
            socorro_submit(writer, kept, at, hang="hang-same-ts")  # same hang id and time: one row, two sides
            socorro_2016_save_processed(writer, _socorro_processed(gone, "js::Private"))
        finally:
            writer.close()
        hang_row = stored.socorro_hang_time_key("hang-same-ts", at)
        assert stored.parse_socorro_hang_time_key(hang_row) == ("hang-same-ts", at)
        assert set(store.backend.get_row(K.HANG_ID_SUBMITTED_TIME, hang_row).values()) == {gone.encode(), kept.encode()}
        assert store.backend.get_row(K.SIGNATURE_OOID, stored.socorro_signature_key("js::Private", gone))
        assert delete_crashes(store.backend, [gone]) == [gone]
        needle = gone.encode()
        for table in store.backend.list_tables():
            for row, cells in store.backend.scan(table):
                assert needle not in row and not any(needle in c or needle in v for c, v in cells.items()), (table, row)
        assert store.backend.get_row(K.HANG_ID_SUBMITTED_TIME, hang_row) == {K.hang_column("default"): kept.encode()}


def test_socorros_rows_naming_a_deleted_crash_are_orphans_repair_deletes(backend_url, backend_kind):
    """Issue 32, defect 1: rows of Socorro's left by a deletion made before the fix (or by any
    writer) name a crash that is gone: ORPHAN, exit 1, and ``--repair`` deletes them, not FOREIGN."""
    with open_store(backend_url) as store:
        store.create_tables()
        gone = cid("9", 90)
        at = datetime(2016, 9, 18, 9, 40, 15, 500000, tzinfo=UTC)
        writer = _writer(store, backend_kind, backend_url)
        try:
            socorro_submit(writer, gone, at, hang="hang-left", process_type="plugin")
            socorro_2016_save_processed(writer, _socorro_processed(gone, "js::Left"))
        finally:
            writer.close()
        store.backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(K.crash_row_key(gone), delete_row=True)])
        report = scrutiny.verify_indexes(store.backend)
        for table in (K.SIGNATURE_OOID, K.HANG_ID_SUBMITTED_TIME):
            assert (report[table]["orphan"], report[table]["foreign"]) == (1, 0), table
        scrutiny.verify_indexes(store.backend, repair=True, orphan_age_s=0)
        assert store.backend.get_row(K.SIGNATURE_OOID, stored.socorro_signature_key("js::Left", gone)) == {}
        assert store.backend.get_row(K.HANG_ID_SUBMITTED_TIME, stored.socorro_hang_time_key("hang-left", at)) == {}

# -- issue 39, item 1: the documented steps on several days of Socorro's rows --------------------

@pytest.fixture
def socorro_days(backend_url, backend_kind):
    with open_store(backend_url) as store:
        store.create_tables()
        counted_live(store)  # beside Socorro's code, which increments the same counters, counting stays live
        writer = _writer(store, backend_kind, backend_url)
        try:
            at = socorro_days_written(writer)
        finally:
            writer.close()
        store.flush_counters()
        yield store, at


def _judged(report):
    return {table: {k: v for k, v in counts.items() if v} for table, counts in report.items()}


@pytest.mark.parametrize("window", [("2016-09-01", None), ("2016-09-18", None), ("2016-01-01", "2017-01-01"),
                                    ("2016-09-18", "2016-09-22")])
def test_a_day_range_judges_socorros_rows_as_the_whole_table_does(socorro_days, window):
    """Issue 39, item 1: verify-indexes --since/--until read only the last day's crash rows of
    their range (a late-bound day in each day's scans), so MISSING pointers of Socorro's rows on
    the other days were neither reported nor repaired: one judgement, whatever the range."""
    store, at = socorro_days
    since, until = window
    whole = _judged(scrutiny.verify_indexes(store.backend))
    assert whole[K.SIGNATURE_OOID]["missing"] == 5 and whole[K.HANG_ID_SUBMITTED_TIME]["missing"] == 3
    assert whole[K.LEGACY_UNPROCESSED_FLAG]["missing"] == 1  # the crash Socorro's dead processor took
    assert _judged(scrutiny.verify_indexes(store.backend, since=since, until=until)) == whole
    repaired = scrutiny.verify_indexes(store.backend, repair=True, since=since, until=until)
    assert scrutiny.problems_left(repaired, repair=True) == 0
    assert {t: c["repaired_missing"] for t, c in repaired.items()} == {t: c.get("missing", 0) for t, c in whole.items()}
    after = scrutiny.verify_indexes(store.backend)
    assert scrutiny.problems_left(after) == 0, _judged(after)
    assert after[K.SIGNATURE_OOID]["foreign"] == 4 and after[K.HANG_ID_SUBMITTED_TIME]["foreign"] == 3


def test_documented_steps_on_several_days_of_socorros_rows(socorro_days, backend_url):
    """Issue 39, item 1: docs/migrating.md's steps, as written, on rows of the 2013 client, the
    2016 storage and the happybase storage over four crash-id days: each step exits 0, the last
    with Socorro's rows FOREIGN; every crash is then listed, queued or processed, and counted."""
    store, at = socorro_days
    days = SOCORRO_DAYS
    url = ["--url", backend_url]
    steps = [["verify-indexes", "--repair", "--since", "2016-01-01"], ["reconcile-queue"],
             ["rollup", "--since", "2016-01-01"], ["verify-indexes", "--json"]]
    results = [CliRunner().invoke(main, url + step) for step in steps]
    assert [r.exit_code for r in results] == [0, 0, 0, 0], [r.output for r in results]
    final = json.loads(results[3].stdout)
    assert {t: c["foreign"] for t, c in final.items() if c["foreign"]} == {K.SIGNATURE_OOID: 4,
                                                                          K.HANG_ID_SUBMITTED_TIME: 3}
    by_time = sorted(at.values(), key=lambda item: (item[1], item[0]))
    assert list(store.crashes_submitted(days[0], "2016-09-22")) == [c for c, _t in by_time]
    assert scrutiny.count_queues(store.backend) == {"standard": 7, "legacy": 3, "priority": 0}
    assert {q: n for q, n in store.queue_sizes().items() if q in ("standard", "legacy")} == {"standard": 7, "legacy": 3}
    queued = {at[n][0] for n in ("plugin", "browser", "dead", "content", "happybase", "happybase_late", "plain")}
    assert set(store.new_crashes()) == queued
    assert list(store.crashes_by_signature("js::Taken")) == [at["taken"][0], at["processed_2016"][0]]
    assert list(store.crashes_by_signature("js::Happy")) == [at["happybase_done"][0]]
    states = {item["crash_id"]: item["state"] for item in store.list_crashes(days[0], "2016-09-22", details=True)}
    assert states[at["happybase_done"][0]] == "processed" and states[at["happybase"][0]] == "queued"
    for day in days:
        assert store.get_metrics(day.strftime("%Y-%m-%d"))["submitted_crash_reports"] == 3, day
    assert store.get_metrics("2016-09")["submitted_crash_reports"] == 12


def test_a_day_range_judges_the_pointers_of_crashes_submitted_days_after_their_id(backend_url, backend_kind):
    """Issue 39, item 1: Socorro's collector with ``accept_submitted_crash_id`` kept a client's
    crash id (dated days before) and stamped the submission now.  verify-indexes --since/--until
    judged only pointers within a day of the range, so such a crash's pointers (here the legacy one
    2013's put_processed_json left behind) were neither VALID nor ORPHAN; the whole table's were."""
    crash_id = "e0000077-0000-4000-8000-000002160910"  # dated 2016-09-10
    with open_store(backend_url) as store:
        store.create_tables()
        writer = _writer(store, backend_kind, backend_url)
        try:
            socorro_2013_put_json_dump(writer, crash_id, {"ProductName": "Firefox", "uuid": crash_id,
                                                          "submitted_timestamp": "2016-09-18T12:00:00.500000+00:00"})
            socorro_2016_save_processed(writer, _socorro_processed(crash_id, "js::Resubmitted"))
        finally:
            writer.close()
        whole = _judged(scrutiny.verify_indexes(store.backend))
        assert whole[K.LEGACY_UNPROCESSED_FLAG] == {"orphan": 1} and whole[K.SUBMITTED_TIME] == {"valid": 1}
        assert _judged(scrutiny.verify_indexes(store.backend, since="2016-09-10", until="2016-09-11")) == whole
        scrutiny.verify_indexes(store.backend, repair=True, since="2016-09-10", until="2016-09-11")
        assert scrutiny.problems_left(scrutiny.verify_indexes(store.backend)) == 0

