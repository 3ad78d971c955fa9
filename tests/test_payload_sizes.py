"""Request sizes on Bigtable: MutateRows batches split to the service's limits, rows over them
refused before anything is written.  Runs on the emulator (``bigtable_emulator_url``).

The byte limits (256 MiB) are too big to reach in a test, so these tests lower them on the
module; the splitting and refusing code is the one that runs with the real values.
"""

import pytest
from conftest import isolated_url
from store_helpers import all_rows, crash_id, raw_crash

from socorro_store import open_store
from socorro_store.backends import RowMutation, open_backend
from socorro_store.errors import RequestTooLarge
from socorro_store.schema.specs import FamilySpec, TableSpec

pytest.importorskip("google.cloud.bigtable.data", reason="needs the bigtable extra")
from socorro_store.backends import bigtable  # noqa: E402
from socorro_store.backends import bigtable_support  # noqa: E402

MB = 1024 * 1024


@pytest.fixture
def bt_url(bigtable_emulator_url, tmp_path):
    return isolated_url("bigtable-emulator", bigtable_emulator_url, tmp_path)


def test_batches_split_at_the_request_byte_limit(bt_url, monkeypatch):
    monkeypatch.setattr(bigtable_support, "MAX_REQUEST_BYTES", 1 * MB)
    with open_backend(bt_url) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
        values = {b"r%02d" % i: bytes([i]) * (300 * 1024) for i in range(10)}
        backend.mutate_rows("t", [RowMutation(row, {b"cf:v": v}) for row, v in values.items()])
        assert backend.calls["mutate_rows"] == 4  # 3 rows of 300 KB per 1 MB request
        assert backend.get_rows("t", list(values)) == {row: {b"cf:v": v} for row, v in values.items()}


def test_batches_split_at_the_mutation_count_limit(bt_url, monkeypatch):
    monkeypatch.setattr(bigtable, "MAX_MUTATIONS_PER_CALL", 10)
    with open_backend(bt_url) as backend:
        backend.create_table(TableSpec("t", (FamilySpec("cf"),)))
        rows = [RowMutation(b"r%02d" % i, {b"cf:a": b"1", b"cf:b": b"2", b"cf:c": b"3"}) for i in range(9)]
        backend.mutate_rows("t", rows)
        assert backend.calls["mutate_rows"] == 3
        assert len(backend.get_rows("t", [m.row for m in rows])) == 9
        with pytest.raises(RequestTooLarge, match="10 per request"):
            backend.mutate_rows("t", [RowMutation(b"wide", {b"cf:%d" % i: b"x" for i in range(11)})])
        assert backend.get_row("t", b"wide") == {}


def test_row_over_the_row_limit_is_refused_before_any_write(bt_url, monkeypatch):
    monkeypatch.setattr(bigtable_support, "MAX_ROW_BYTES", 2 * MB)
    with open_store(bt_url) as store:
        store.create_tables()
        cid, small = crash_id("a"), crash_id("b")
        with pytest.raises(RequestTooLarge, match="row limit"):
            store.save_raw_crashes([(raw_crash(small), {"upload_file_minidump": b"x" * 1000}, small),
                                    (raw_crash(cid), {"upload_file_minidump": b"x" * (3 * MB)}, cid)])
        assert all_rows(store.backend) == {}
        with pytest.raises(RequestTooLarge, match="row limit"):
            store.backend.mutate_rows("crash_reports", [RowMutation(b"ok", {b"flags:processed": b"N"}),
                                                        RowMutation(b"big", {b"raw_data:dump": b"x" * (3 * MB)})])
        assert all_rows(store.backend) == {}
