"""Export / import of a range of crashes as a msgpack stream, between two real embedded stores."""

import io
import random
from datetime import timedelta

import msgpack
import pytest
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.errors import InvalidArgument, StreamCorrupt
from socorro_store.jobs import rollup, scrutiny, transfer
from socorro_store.schema import keys as K

DAY = BASE_TIME.replace(hour=0)
UNTIL = DAY + timedelta(days=3)  # every interval of the day is closed


def fill(store, n=24, seed=3):
    """n crashes of DAY: most processed (a few failed), some queued, one with a pending
    reprocessing request, a hang pair, dumps of several sizes."""
    rng = random.Random(seed)
    ids = []
    for i in range(n):
        cid = crash_id("0123456789abcdef"[i % 16], rng=rng)
        extra = {"legacy_processing": i % 3}
        if i in (4, 5):
            extra.update(HangID="hang-x", ProcessType="plugin" if i == 4 else "browser")
        dumps = {"upload_file_minidump": bytes(rng.getrandbits(8) for _ in range(100 + i * 37))}
        if i % 5 == 0:
            dumps["flash1"] = b"F" * i
        store.save_raw_crash(raw_crash(cid, submitted=DAY + timedelta(minutes=37 * i), **extra), dumps, cid)
        ids.append(cid)
    for i, cid in enumerate(ids[:-5]):
        signature = None if i == 3 else f"sig-{i % 4}"
        store.save_processed(processed(cid, signature, success=signature is not None, email="x@example.com"))
    store.enqueue_priority([ids[1]])
    return ids


def export_bytes(store, **options):
    out = io.BytesIO()
    transfer.export_crashes(store.backend, DAY, DAY + timedelta(days=1), out, **options)
    return out.getvalue()


def counters(store):
    """Every counter cell of the metrics and signature tables (the rollup marks left out)."""
    return {table: {row: {c: v for c, v in cells.items() if c.startswith(b"counters:")}
                    for row, cells in store.backend.scan(table)}
            for table in (K.METRICS, K.SIGNATURES)}


def crash_view(store, cid):
    state = store.get_processing_state(cid)
    state.pop("claim")
    try:
        done = store.get_unredacted_processed(cid)
    except Exception:  # noqa: BLE001 - not processed
        done = None
    return store.get_raw_crash(cid), store.get_raw_dumps(cid), done, state


@pytest.fixture
def source(tmp_path):
    with open_store(f"embedded://{tmp_path / 'source'}") as store:
        store.create_tables()
        yield store


@pytest.fixture
def target(tmp_path):
    with open_store(f"embedded://{tmp_path / 'target'}") as store:
        store.create_tables()
        yield store


def test_export_then_import_gives_equal_crashes_and_counters_and_a_second_import_changes_nothing(source, target):
    ids = fill(source)
    stream = export_bytes(source)
    records = list(msgpack.Unpacker(io.BytesIO(stream), raw=False))
    assert records[0]["kind"] == "header" and records[0]["crashes"] == len(ids)
    assert records[-1]["kind"] == "trailer" and records[-1]["crashes"] == len(ids)
    assert records[-1]["processed"] == len(ids) - 5

    report = transfer.import_crashes(target, io.BytesIO(stream), rollup_counters=False)
    assert (report["imported"], report["processed"], report["queued"]) == (len(ids), len(ids) - 5, 5)
    for cid in ids:
        assert crash_view(target, cid) == crash_view(source, cid), cid
    assert target.hang_pair("hang-x") == source.hang_pair("hang-x")
    assert target.queue_sizes() == source.queue_sizes()
    assert scrutiny.count_queues(target.backend) == scrutiny.count_queues(source.backend)
    assert {k: (v["missing"], v["orphan"]) for k, v in scrutiny.verify_indexes(target.backend).items()} == \
        {k: (0, 0) for k in scrutiny.INDEX_TABLES}
    for store in (source, target):  # exact counters on both sides, as rollup makes them
        rollup.run_rollup(store.backend, until=UNTIL, since=DAY.date().isoformat())
    assert counters(target) == counters(source)
    assert counters(target)[K.METRICS][b"2016-09-18"][b"counters:submitted_crash_reports"] == K.encode_counter(24)

    before = all_rows(target.backend), counters(target)
    again = transfer.import_crashes(target, io.BytesIO(stream))
    assert (again["imported"], again["skipped"], again["rollup"]) == (0, len(ids), None)
    assert (all_rows(target.backend), counters(target)) == before


def test_import_runs_rollup_for_the_imported_days(source, target):
    fill(source, n=8)
    report = transfer.import_crashes(target, io.BytesIO(export_bytes(source)))
    assert report["imported"] == 8 and report["rollup"]["days"] >= 1
    assert report["rollup"]["drift"] == {}  # the live counters of the import were already exact


def test_export_without_dumps(source, target):
    ids = fill(source, n=6)
    transfer.import_crashes(target, io.BytesIO(export_bytes(source, dumps=False)), rollup_counters=False)
    assert target.get_raw_dumps(ids[0]) == {}
    assert target.get_raw_crash(ids[0]) == source.get_raw_crash(ids[0])


def test_truncated_stream_names_the_offset_and_keeps_what_came_before(source, target):
    ids = fill(source, n=10)
    stream = export_bytes(source)
    cut = len(stream) // 2
    with pytest.raises(StreamCorrupt) as info:
        transfer.import_crashes(target, io.BytesIO(stream[:cut]))
    assert 0 < info.value.offset < cut and f"byte {info.value.offset}" in str(info.value)
    imported = list(target.crashes_submitted(DAY, DAY + timedelta(days=1)))
    assert 0 < len(imported) < len(ids) and imported == ids[:len(imported)]
    whole = list(msgpack.Unpacker(io.BytesIO(stream), raw=False))  # the offset: header + the crashes imported
    assert info.value.offset == sum(len(msgpack.packb(r, use_bin_type=True)) for r in whole[:len(imported) + 1])
    for cid in imported:
        assert crash_view(target, cid)[:3] == crash_view(source, cid)[:3]
    assert {k: (v["missing"], v["orphan"]) for k, v in scrutiny.verify_indexes(target.backend).items()} == \
        {k: (0, 0) for k in scrutiny.INDEX_TABLES}
    # the whole stream then completes the import
    done = transfer.import_crashes(target, io.BytesIO(stream), rollup_counters=False)
    assert (done["imported"], done["skipped"]) == (len(ids) - len(imported), len(imported))


@pytest.mark.parametrize("damage", ["garbage", "no trailer", "bad checksum", "not an export", "bad record"])
def test_corrupt_streams_are_refused_with_a_typed_error(source, target, damage):
    fill(source, n=3)
    stream = export_bytes(source)
    records = list(msgpack.Unpacker(io.BytesIO(stream), raw=False))
    pack = lambda rs: b"".join(msgpack.packb(r, use_bin_type=True) for r in rs)
    if damage == "garbage":
        data = pack(records[:2]) + b"\xc1" + stream[len(pack(records[:2])):]
    elif damage == "no trailer":
        data = pack(records[:-1])
    elif damage == "bad checksum":
        data = pack(records[:-1] + [{**records[-1], "sha256": "0" * 64}])
    elif damage == "not an export":
        data = msgpack.packb({"hello": "world"})
    else:
        data = pack(records[:1] + [{**records[1], "crash_id": "not-a-crash-id"}] + records[2:])
    with pytest.raises(StreamCorrupt) as info:
        transfer.import_crashes(target, io.BytesIO(data))
    assert info.value.offset >= 0
    if damage == "not an export":
        assert all_rows(target.backend) == {}


def test_export_validates_its_range(source):
    with pytest.raises(InvalidArgument):
        transfer.export_crashes(source.backend, DAY, DAY, io.BytesIO())
    with pytest.raises(InvalidArgument):
        transfer.export_crashes(source.backend, "yesterday", DAY, io.BytesIO())


def _exported_ids(stream):
    return [r["crash_id"] for r in msgpack.Unpacker(io.BytesIO(stream.getvalue()), raw=False) if r["kind"] == "crash"]


def test_export_holds_socorros_crash_rows_as_the_store_judges_them(embedded_url, tmp_path):
    """Issue 39, item 1 (the same split in export): crash rows no pointer names (Socorro's happybase
    storage) were left out of every range, and a crash it processed (``flags:processed`` empty)
    travelled unprocessed; each day's export and the whole range's hold each crash once."""
    from socorro_rows import SOCORRO_DAYS, BackendWriter, socorro_days_written  # noqa: PLC0415

    with open_store(embedded_url) as store:
        store.create_tables()
        at = socorro_days_written(BackendWriter(store.backend))
        whole = io.BytesIO()
        trailer = transfer.export_crashes(store.backend, SOCORRO_DAYS[0], SOCORRO_DAYS[-1] + timedelta(days=1), whole)
        assert sorted(_exported_ids(whole)) == sorted(c for c, _t in at.values())
        assert trailer["crashes"] == 12 and trailer["processed"] == 5  # 4 by Socorro's processor, 1 by happybase
        by_day = []
        for day in SOCORRO_DAYS:
            stream = io.BytesIO()
            transfer.export_crashes(store.backend, day, day + timedelta(days=1), stream)
            by_day += _exported_ids(stream)
        assert sorted(by_day) == sorted(_exported_ids(whole))
        with open_store(f"embedded://{tmp_path / 'copy'}") as copy:
            copy.create_tables()
            whole.seek(0)
            transfer.import_crashes(copy, whole, rollup_counters=False)
            for crash_id, _t in at.values():
                theirs, ours = store.get_processing_state(crash_id), copy.get_processing_state(crash_id)
                assert (ours["processed"], ours["signature"]) == (theirs["processed"], theirs["signature"]), crash_id
            assert copy.get_processing_state(at["happybase_done"][0])["signature"] == "js::Happy"
