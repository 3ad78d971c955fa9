"""Issue 21, defect 1: an import never writes a crash other than the record's own.

A hostile (or damaged) export record whose documents name another crash than the record's
``crash_id`` is refused with :class:`RecordRefused`, and nothing of it is written.
"""

import hashlib
import io
import json
import subprocess
import sys
from datetime import timedelta

import msgpack
import pytest
from store_helpers import BASE_TIME, all_rows, crash_id, processed, raw_crash

from socorro_store import open_store
from socorro_store.errors import InvalidArgument, RecordRefused, StreamCorrupt
from socorro_store.jobs import transfer
from socorro_store.schema import change_keys as C

DAY = BASE_TIME.replace(hour=0)


def pack(records):
    return b"".join(msgpack.packb(r, use_bin_type=True) for r in records)


def stream_of(crash_records):
    """A well-formed export stream (header, records, trailer with the right checksum)."""
    header = {"kind": "header", "format": transfer.FORMAT, "start": DAY.isoformat(),
              "end": (DAY + timedelta(days=1)).isoformat(), "crashes": len(crash_records), "dumps": True}
    body = pack(crash_records)
    trailer = {"kind": "trailer", "crashes": len(crash_records), "processed": 0, "dumps": 0, "dump_bytes": 0,
               "sha256": hashlib.sha256(body).hexdigest()}
    return pack([header]) + body + pack([trailer])


def record(cid, raw=None, processed_doc=None, priority=None):
    return {"kind": "crash", "crash_id": cid, "raw_crash": json.dumps(raw or raw_crash(cid)),
            "dumps": {"upload_file_minidump": b"MDMP"},
            "processed": json.dumps(processed_doc) if processed_doc is not None else None, "priority": priority}


@pytest.fixture
def target(tmp_path):
    with open_store(f"embedded://{tmp_path / 'target'}") as store:
        store.create_tables()
        yield store


@pytest.fixture
def victim(target):
    """A stored, processed crash V with a private field."""
    cid = crash_id("a")
    target.save_raw_crash(raw_crash(cid), {"upload_file_minidump": b"V"}, cid)
    target.save_processed(processed(cid, "victim-signature", email="v@example.com"))
    target.settle()  # its change record fed: the snapshots below see no background feed
    return cid


def snapshot(store):
    """Every cell of every table, but the search feed's lease (renewed by a feeder thread)."""
    return {table: {row: cells for row, cells in store.backend.scan(table) if row != C.FEED_LEASE_ROW}
            for table in store.backend.list_tables()}


@pytest.mark.parametrize("field", ["processed uuid", "processed crash_id", "raw uuid", "raw ooid"])
def test_a_record_naming_another_crash_is_refused_and_writes_nothing(target, victim, field):
    new = crash_id("b")
    raw, done = raw_crash(new), processed(new, "attacker-signature")
    if field == "processed uuid":
        done["uuid"] = victim
    elif field == "processed crash_id":
        done["crash_id"] = victim
    elif field == "raw uuid":
        raw["uuid"] = victim
    else:
        raw["ooid"] = victim
    before = snapshot(target)
    with pytest.raises(RecordRefused) as info:
        transfer.import_crashes(target, io.BytesIO(stream_of([record(new, raw, done)])), rollup_counters=False)
    assert isinstance(info.value, InvalidArgument) and isinstance(info.value, StreamCorrupt)
    assert info.value.crash_id == new and new in str(info.value)
    assert snapshot(target) == before  # neither the victim nor the record's crash was written
    assert target.get_unredacted_processed(victim)["signature"] == "victim-signature"
    assert target.get_unredacted_processed(victim)["email"] == "v@example.com"


def test_a_processed_crash_without_uuid_is_refused(target):
    new = crash_id("c")
    done = processed(new)
    del done["uuid"]
    with pytest.raises(RecordRefused):
        transfer.import_crashes(target, io.BytesIO(stream_of([record(new, processed_doc=done)])))
    assert all_rows(target.backend) == {}


def test_records_before_a_refused_one_are_imported_and_the_offset_names_it(target):
    good, bad, other = crash_id("1"), crash_id("2"), crash_id("3")
    records = [record(good, processed_doc=processed(good)), record(bad, processed_doc=processed(other))]
    with pytest.raises(RecordRefused) as info:
        transfer.import_crashes(target, io.BytesIO(stream_of(records)), rollup_counters=False)
    data = stream_of(records)
    whole = list(msgpack.Unpacker(io.BytesIO(data), raw=False))
    assert info.value.offset == len(pack(whole[:2]))  # the header and the good record came first
    assert target.get_processed(good)["uuid"] == good
    rows = all_rows(target.backend)
    assert not any(bad.encode() in row or other.encode() in row for table in rows.values() for row in table)


def test_a_crash_stored_with_another_payload_is_skipped_not_overwritten(target, victim):
    raw = raw_crash(victim, Version="999.0")
    before = snapshot(target)
    report = transfer.import_crashes(target, io.BytesIO(stream_of([record(victim, raw, processed(victim, "x"))])),
                                     rollup_counters=False)
    assert (report["imported"], report["skipped"]) == (0, 1)
    assert snapshot(target) == before


def test_the_cli_refuses_a_hostile_record_in_one_line_with_exit_2(tmp_path, target, victim):
    new = crash_id("b")
    path = tmp_path / "hostile.msgpack"
    path.write_bytes(stream_of([record(new, processed_doc=processed(victim, "attacker"))]))
    url = f"embedded://{tmp_path / 'target'}"
    target.close()
    result = subprocess.run([sys.executable, "-m", "socorro_store", "--url", url, "import", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused" in lines[0] and "Traceback" not in result.stderr
    with open_store(url) as reopened:
        assert reopened.get_unredacted_processed(victim)["signature"] == "victim-signature"


def _nested_arrays(n):
    """``n`` empty arrays in one: a few bytes each, a Python list each once decoded."""
    return b"\xdd" + n.to_bytes(4, "big") + b"\x90" * n


@pytest.mark.parametrize("shape", ["arrays", "deep maps", "wide map"])
def test_a_small_record_that_decodes_huge_is_refused_before_it_is_built(tmp_path, target, shape):
    """Issue 32, defect 6: an 8 MB record of nested empty arrays took the import to 611 MB before
    any check.  No record of this format holds an array, or more than a few small maps: such a
    record is refused at once (RecordRefused, CLI exit 2, one line), nothing written."""
    import resource  # noqa: PLC0415

    before = snapshot(target)
    body = {"arrays": b"\x81\xa1x" + _nested_arrays(8_000_000),
            "deep maps": b"\x81\xa1a" * 1000 + b"\xc0",
            "wide map": b"\xdf" + (100_000).to_bytes(4, "big") + b"".join(
                msgpack.packb(f"k{i}") + b"\xc0" for i in range(100_000))}[shape]
    stream = pack([{"kind": "header", "format": transfer.FORMAT, "start": DAY.isoformat(),
                    "end": (DAY + timedelta(days=1)).isoformat(), "crashes": 1, "dumps": True}]) + body
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(RecordRefused) as refused:
        transfer.import_crashes(target, io.BytesIO(stream))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mb < 50, grown_mb
    assert "refused" in str(refused.value) and refused.value.crash_id is None
    assert snapshot(target) == before
    path = tmp_path / "huge.msgpack"
    path.write_bytes(stream)
    url = f"embedded://{tmp_path / 'target'}"
    target.close()
    result = subprocess.run([sys.executable, "-m", "socorro_store", "--url", url, "import", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_a_raw_crash_nesting_deep_is_refused_on_input(target):
    """Issue 32, defect 7: a raw crash nesting 100,000 levels ended the import in a RecursionError
    traceback; it is refused (RecordRefused), and the store refuses it on save as well."""
    cid = crash_id("c")
    deep = '{"ProductName": "Firefox", "submitted_timestamp": "2016-09-18T12:00:00+00:00", "x": ' + \
        "[" * 100_000 + "]" * 100_000 + "}"
    before = snapshot(target)
    with pytest.raises(RecordRefused, match="nests too deep"):
        transfer.import_crashes(target, io.BytesIO(stream_of([{**record(cid), "raw_crash": deep}])))
    assert snapshot(target) == before
    nested = {"submitted_timestamp": "2016-09-18T12:00:00+00:00"}
    for _ in range(100_000):
        nested = {"x": nested}
    with pytest.raises(InvalidArgument):
        target.save_raw_crash({**nested, "submitted_timestamp": "2016-09-18T12:00:00+00:00"}, {}, cid)
    assert snapshot(target) == before
