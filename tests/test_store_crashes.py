"""The crash store on every backend kind: round trips, indexes, write order, bad input."""

import json
import time
from datetime import timedelta

import pytest
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import CrashIDNotFound, InvalidArgument, InvalidCrashID, open_store
from socorro_store.backends import RowMutation
from socorro_store.backends.base import Backend
from socorro_store.schema import keys as K


def test_raw_crash_and_dumps_round_trip(store, tmp_path):
    cid = crash_id("a")
    dumps = {"upload_file_minidump": b"\x00MDMP" + bytes(5000), "upload_file_minidump_browser": b"browser"}
    store.save_raw_crash(raw_crash(cid, Notes="ünïcode"), dumps, cid)
    assert store.get_raw_crash(cid) == raw_crash(cid, Notes="ünïcode")
    assert store.get_raw_dumps(cid) == dumps
    assert store.get_raw_dump(cid) == dumps["upload_file_minidump"]
    assert store.get_raw_dump(cid, "upload_file_minidump_browser") == b"browser"
    # Socorro's column name for the default dump
    cells = store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(cid), columns=[b"raw_data"])
    assert set(cells) == {b"raw_data:dump", b"raw_data:upload_file_minidump_browser"}
    paths = store.get_raw_dumps_as_files(cid, str(tmp_path / "dumps"))
    assert set(paths) == set(dumps)
    for name, path in paths.items():
        with open(path, "rb") as handle:
            assert handle.read() == dumps[name]
    with pytest.raises(CrashIDNotFound):
        store.get_raw_dump(cid, "upload_file_minidump_content")


def test_crash_row_columns(store):
    cid = crash_id("b")
    store.save_raw_crash(raw_crash(cid, legacy_processing=0, HangID="hang-1", ProcessType="plugin"), {}, cid)
    row = store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(cid))
    assert row[b"flags:processed"] == b"N"
    assert row[b"flags:legacy_processing"] == b"0"
    assert row[b"ids:ooid"] == cid.encode() and row[b"ids:hang"] == b"hang-1"
    assert json.loads(row[b"meta_data:json"])["uuid"] == cid
    assert row[b"timestamps:submitted"] == K.format_timestamp(BASE_TIME)
    store.save_processed(processed(cid, signature=""))
    row = store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(cid))
    assert row[b"flags:processed"] == b"Y"
    assert row[b"processed_data:signature"] == b"##empty##"
    assert row[b"timestamps:processed"] == K.format_timestamp(BASE_TIME + timedelta(hours=1))
    assert json.loads(row[b"processed_data:json"])["signature"] == ""


def test_missing_signature_is_null(store):
    cid = crash_id("c")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    doc = processed(cid)
    del doc["signature"]
    store.save_processed(doc)
    assert store.get_processing_state(cid)["signature"] == "##null##"
    assert list(store.crashes_by_signature(None)) == [cid]


def test_every_index_is_written(store):
    cid = crash_id("e")
    store.save_raw_crash(raw_crash(cid, legacy_processing=0, HangID="h-9", ProcessType="content"), {}, cid)
    store.settle()  # the legacy time, hang and signature pointers are the deriver's (a cut-over store)
    key = K.time_index_key(cid, BASE_TIME)
    b = store.backend
    for table in (K.SUBMITTED_TIME, K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG,
                  K.LEGACY_SUBMITTED_TIME, K.HANG_ID_SUBMITTED_TIME):
        assert b.get_row(table, key)[b"ids:ooid"] == cid.encode(), table
    assert b.get_row(K.HANG_ID_SUBMITTED_TIME, key)[b"ids:hang"] == b"h-9"
    assert b.get_row(K.HANG_ID, b"h-9") == {b"ids:ooid:content": cid.encode()}
    assert store.hang_pair("h-9") == {"content": cid}
    store.save_processed(processed(cid, signature="js::gc::Mark"))
    store.settle()
    sig_key = K.signature_index_key("js::gc::Mark", BASE_TIME, cid)
    assert b.get_row(K.SIGNATURE_OOID, sig_key) == {b"ids:ooid": cid.encode()}
    # processing removed the queue pointers, kept the plain indexes
    assert b.get_row(K.UNPROCESSED_FLAG, key) == {}
    assert b.get_row(K.LEGACY_UNPROCESSED_FLAG, key) == {}
    assert b.get_row(K.SUBMITTED_TIME, key) != {}
    assert b.get_row(K.LEGACY_SUBMITTED_TIME, key) != {}


def test_throttled_crash_skips_legacy_indexes(store):
    cid = crash_id("f")
    store.save_raw_crash(raw_crash(cid, legacy_processing=2), {}, cid)
    rows = all_rows(store.backend)
    assert K.LEGACY_UNPROCESSED_FLAG not in rows and K.LEGACY_SUBMITTED_TIME not in rows
    assert K.HANG_ID not in rows


class _FailingCrashRows:
    """Wraps a backend; the crash_reports write fails, as a server dying mid-save would."""

    def __init__(self, backend):
        self._backend, self.order = backend, []

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def mutate_rows(self, table, mutations, timestamp=None):
        self.order.append(table)
        if table == K.CRASH_REPORTS:
            raise ConnectionError("crash row write lost")
        return self._backend.mutate_rows(table, mutations, timestamp)

    def mutate_tables(self, mutations_by_table):  # through this wrapper's mutate_rows
        return Backend.mutate_tables(self, mutations_by_table)


def test_pointers_are_written_before_the_crash_row(store):
    """A failed crash-row write leaves pointers (harmless, skipped by readers), never the reverse."""
    from socorro_store.crashstore.store import CrashStore

    cid = crash_id("1")
    failing = _FailingCrashRows(store.backend)
    with pytest.raises(ConnectionError):
        CrashStore(failing).save_raw_crash(raw_crash(cid, legacy_processing=0, HangID="x"), {}, cid)
    # the three pointer tables and the change record (for the deriver) first, the crash row
    # last; the legacy time and hang pointers are the deriver's, from the crash row
    assert failing.order[-1] == K.CRASH_REPORTS and len(failing.order) == 5 and K.CHANGES in failing.order[:-1]
    assert not {K.LEGACY_SUBMITTED_TIME, K.HANG_ID, K.HANG_ID_SUBMITTED_TIME} & set(failing.order)
    rows = all_rows(store.backend)
    assert K.CRASH_REPORTS not in rows and K.UNPROCESSED_FLAG in rows
    # readers and the queue skip the orphan pointer
    assert list(store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(days=1))) == []
    assert list(store.new_crashes()) == []


def test_forbidden_keys_are_redacted(store):
    cid = crash_id("2")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    store.save_processed(processed(cid, url="http://secret", email="a@b.c", user_id="u",
                                   json_dump={"sensitive": {"x": 1}, "threads": [1]}))
    redacted = store.get_processed(cid)
    assert "url" not in redacted and "email" not in redacted and "user_id" not in redacted
    assert redacted["json_dump"] == {"threads": [1]}
    full = store.get_unredacted_processed(cid)
    assert full["url"] == "http://secret" and full["json_dump"]["sensitive"] == {"x": 1}


def test_configurable_forbidden_keys(backend_url, prebuilt_tables):
    with open_store(backend_url, forbidden_keys="product, json_dump.threads") as store:
        store.create_tables()
        cid = crash_id("3")
        store.save_raw_crash(raw_crash(cid), {}, cid)
        store.save_processed(processed(cid, product="Firefox", url="kept", json_dump={"threads": []}))
        assert store.get_processed(cid) == {k: v for k, v in processed(
            cid, url="kept", json_dump={}).items()}


def test_unknown_crash_reads_raise(store):
    cid = crash_id("4")
    for call in (store.get_raw_crash, store.get_raw_dumps, store.get_raw_dump, store.get_processed,
                 store.get_unredacted_processed, store.get_processing_state):
        with pytest.raises(CrashIDNotFound):
            call(cid)
    with pytest.raises(InvalidCrashID):
        store.get_raw_crash("not-a-crash-id")


def test_batch_save_and_queries(store):
    cids = [crash_id(s) for s in "0123456789abcdef"]
    times = [BASE_TIME + timedelta(minutes=15 * i) for i in range(16)]
    store.save_raw_crashes([(raw_crash(c, t), {"upload_file_minidump": c.encode()}, c)
                            for c, t in zip(cids, times)])
    assert list(store.crashes_submitted(BASE_TIME, BASE_TIME + timedelta(days=1))) == cids
    assert list(store.crashes_submitted(times[3], times[6])) == cids[3:6]
    store.save_processed_crashes([processed(c, signature="foo" if i % 2 else "foo::bar")
                                  for i, c in enumerate(cids)])
    assert list(store.crashes_by_signature("foo")) == cids[1::2]
    assert list(store.crashes_by_signature("foo::bar")) == cids[0::2]
    assert list(store.crashes_by_signature("fo")) == []
    assert list(store.crashes_by_signature("foo", times[2], times[8])) == cids[3:8:2]


def test_hang_pair_both_sides(store):
    browser, child = crash_id("5"), crash_id("6")
    store.save_raw_crash(raw_crash(browser, HangID="pair-1"), {}, browser)
    store.save_raw_crash(raw_crash(child, HangID="pair-1", ProcessType="plugin"), {}, child)
    assert store.hang_pair("pair-1") == {"default": browser, "plugin": child}
    assert store.hang_pair("nothing") == {}


def test_a_hang_pair_counts_at_its_later_side_whichever_side_saves_last(store):
    """The later-submitted side saved first, the earlier one second: the pair is counted in the
    later side's minute, as rollup counts it (it was counted in the earlier one's: live drift)."""
    from datetime import timedelta  # noqa: PLC0415

    from store_helpers import BASE_TIME  # noqa: PLC0415

    early, late = crash_id("8"), crash_id("9")
    store.save_raw_crash(raw_crash(late, BASE_TIME + timedelta(minutes=5), HangID="pair-2", ProcessType="plugin"),
                         {}, late)
    store.save_raw_crash(raw_crash(early, BASE_TIME, HangID="pair-2"), {}, early)
    column = "submitted_crash_report_hang_pairs"
    assert store.get_metrics("2016-09-18T12:05").get(column) == 1
    assert store.get_metrics("2016-09-18T12:00").get(column) is None
    assert store.get_metrics("2016-09-18").get(column) == 1


class _DetectsBeforeCrashRows:
    """Wraps a backend: just before the next crash-row write (the pointers are stored), runs the
    hang-pair detection of the other side, as a background counter sender may."""

    def __init__(self, store, hang_id):
        self._backend, self._store, self._hang_id, self.ran = store.backend, store, hang_id, False

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def mutate_rows(self, table, mutations, timestamp=None):
        from types import SimpleNamespace  # noqa: PLC0415

        from socorro_store.crashstore.crashes import _new_hang_pairs  # noqa: PLC0415

        if table == K.CRASH_REPORTS and not self.ran:
            self.ran = True
            self._store.live_counters.send(_new_hang_pairs(self._backend, [SimpleNamespace(hang_id=self._hang_id)]))
        return self._backend.mutate_rows(table, mutations, timestamp)


def test_a_hang_side_whose_crash_row_is_not_stored_yet_is_not_a_side(store):
    """The earlier side's detection runs while the later side's pointers are stored and its
    crash row is not: it counts nothing (as rollup would not), and the later side's own
    detection counts the pair in its minute.  It was counted in the earlier side's minute."""
    early, late = crash_id("a"), crash_id("b")
    store.save_raw_crash(raw_crash(early, BASE_TIME, HangID="pair-3"), {}, early)
    store.backend = racing = _DetectsBeforeCrashRows(store, "pair-3")
    try:
        store.save_raw_crashes([(raw_crash(late, BASE_TIME + timedelta(minutes=5), HangID="pair-3",
                                           ProcessType="plugin"), {}, late)])
    finally:
        store.backend = racing._backend
    assert racing.ran
    column = "submitted_crash_report_hang_pairs"
    assert store.get_metrics("2016-09-18T12:05").get(column) == 1
    assert store.get_metrics("2016-09-18T12:00").get(column) is None
    assert store.get_metrics("2016-09-18").get(column) == 1


# -- bad input: typed error and nothing written in any table ---------------------------------

def _bad_raw_cases():
    cid = crash_id("7")
    nan = raw_crash(cid)
    nan["value"] = float("nan")
    no_ts = raw_crash(cid)
    del no_ts["submitted_timestamp"]
    return [
        ("invalid crash id", lambda s: s.save_raw_crash(raw_crash(cid), {}, "de1bb258-not-valid"), InvalidCrashID),
        ("crash id with impossible date", lambda s: s.save_raw_crash(raw_crash(cid), {}, cid[:-6] + "161340"),
         InvalidCrashID),
        ("missing submitted_timestamp", lambda s: s.save_raw_crash(no_ts, {}, cid), InvalidArgument),
        ("unparseable submitted_timestamp",
         lambda s: s.save_raw_crash(raw_crash(cid, submitted_timestamp="last tuesday"), {}, cid), InvalidArgument),
        ("raw crash not serialisable", lambda s: s.save_raw_crash(raw_crash(cid, blob=object()), {}, cid),
         InvalidArgument),
        ("raw crash with NaN", lambda s: s.save_raw_crash(nan, {}, cid), InvalidArgument),
        ("bad dump name", lambda s: s.save_raw_crash(raw_crash(cid), {"../etc/passwd": b"x"}, cid), InvalidArgument),
        ("dump not bytes", lambda s: s.save_raw_crash(raw_crash(cid), {"upload_file_minidump": "text"}, cid),
         InvalidArgument),
        ("bad legacy_processing", lambda s: s.save_raw_crash(raw_crash(cid, legacy_processing=7), {}, cid),
         InvalidArgument),
        ("uuid mismatch", lambda s: s.save_raw_crash(raw_crash(crash_id("8")), {}, cid), InvalidArgument),
        ("one bad crash in a batch", lambda s: s.save_raw_crashes(
            [(raw_crash(cid), {}, cid), (raw_crash(cid), {"bad name": b""}, cid)]), InvalidArgument),
        ("processed crash of an unknown crash", lambda s: s.save_processed(processed(cid)), CrashIDNotFound),
        ("processed crash without completeddatetime",
         lambda s: s.save_processed(processed(cid, completeddatetime=None)), InvalidArgument),
        ("processed crash with a bad uuid", lambda s: s.save_processed(processed("nope")), InvalidCrashID),
    ]


@pytest.mark.parametrize("case", _bad_raw_cases(), ids=lambda case: case[0])
def test_bad_input_writes_nothing(store, case):
    _name, action, error = case
    with pytest.raises(error):
        action(store)
    assert all_rows(store.backend) == {}


def test_dump_over_the_cell_limit_writes_nothing(backend_url, prebuilt_tables):
    with open_store(backend_url, max_cell_bytes=64 * 1024) as store:
        store.create_tables()
        cid = crash_id("9")
        with pytest.raises(InvalidArgument):
            store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": bytes(64 * 1024)}, cid)
        assert all_rows(store.backend) == {}
        store.save_raw_crash(raw_crash(cid), {"upload_file_minidump": bytes(32 * 1024)}, cid)
        assert len(store.get_raw_dump(cid)) == 32 * 1024


def test_processed_batch_with_one_unknown_crash_writes_nothing(store):
    known, unknown = crash_id("a"), crash_id("b")
    store.save_raw_crash(raw_crash(known), {}, known)
    store.flush_counters()  # the counters of the saves above are sent (in the background on a remote backend)
    before = all_rows(store.backend)
    calls = dict(store.backend.calls)
    with pytest.raises(CrashIDNotFound):
        store.save_processed_crashes([processed(known), processed(unknown)])
    assert all_rows(store.backend) == before
    assert store.backend.calls["mutate_rows"] == calls.get("mutate_rows", 0)
    assert store.get_processing_state(known)["processed"] is False


def test_signature_with_nul_is_stored_apart(store):
    a, b = crash_id("c"), crash_id("d")
    store.save_raw_crashes([(raw_crash(a), {}, a), (raw_crash(b), {}, b)])
    store.save_processed_crashes([processed(a, signature="x\x00y"), processed(b, signature="x")])
    assert list(store.crashes_by_signature("x\x00y")) == [a]
    assert list(store.crashes_by_signature("x")) == [b]
    assert store.backend.get_row(K.CRASH_REPORTS, K.crash_row_key(a), columns=[K.COL_SIGNATURE]) == {
        K.COL_SIGNATURE: b"x\x00y"}


def test_reprocessing_moves_the_signature(store):
    cid = crash_id("e")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    store.save_processed(processed(cid, signature="old"))
    store.enqueue_priority([cid])
    assert list(store.new_crashes(queue="priority")) == [cid]
    store.save_processed(processed(cid, signature="new"))
    assert list(store.crashes_by_signature("old")) == []
    assert list(store.crashes_by_signature("new")) == [cid]
    # the move cancels the first count: zeros, or no cell at all where the two were coalesced
    assert set(store.get_signature_counters("old").values()) <= {0}
    assert set(store.get_signature_counters("new").values()) == {1}
    assert list(store.backend.scan(K.UNPROCESSED_FLAG, prefix=K.PRIORITY_PREFIX)) == []
    assert store.get_processing_state(cid)["priority_processing"] is False


def test_set_active_installations(store):
    store.set_active_installations("Firefox", "2016-09-18", 1234567)
    store.set_active_installations("Firefox", "2016-09-18", 1234568)  # a put, not an increment
    assert store.get_metrics("2016-09-18") == {"firefox_active_installations": 1234568}
    with pytest.raises(InvalidArgument):
        store.set_active_installations("Firefox", "2016-09-18", -1)
    with pytest.raises(InvalidArgument):
        store.get_metrics("last week")


def test_stale_signature_pointer_is_not_listed(store):
    """A signature pointer left behind (its delete failed) does not list the crash under it."""
    cid = crash_id("f")
    store.save_raw_crash(raw_crash(cid), {}, cid)
    store.save_processed(processed(cid, signature="old"))
    store.settle()  # the deriver writes the pointer
    stale = next(iter(store.backend.scan(K.SIGNATURE_OOID)))
    store.save_processed(processed(cid, signature="new"))
    store.settle()  # derived: the stale pointer put back below stays
    time.sleep(0.002)  # as on HBase, a put in the delete marker's millisecond would stay hidden
    store.backend.mutate_rows(K.SIGNATURE_OOID, [RowMutation(stale[0], stale[1])])  # put it back
    assert [row for row, _ in store.backend.scan(K.SIGNATURE_OOID)].count(stale[0]) == 1
    assert list(store.crashes_by_signature("old")) == []
    assert list(store.crashes_by_signature("new")) == [cid]
