"""Bigtable-specific behaviour of the bigtable backend, on Google's emulator.

The contract suites (``test_contract_*.py``) already run on the emulator through the ``backend``
fixture.  These tests check what only this adapter does: GC rules from specs, the ms <-> us
boundary (read back with an independent data client), not-applicable attributes, deletes that
spare newer cells, emulated reversed scans, validation before a non-atomic write, and errors.
"""

import socket
import struct
import time
import warnings

import pytest
from conftest import isolated_url

from socorro_store.backends import open_backend
from socorro_store.backends.base import Increment, RowMutation
from socorro_store.errors import BackendUnavailable, FamilyNotFound, InvalidArgument, NotACounter, TableNotFound
from socorro_store.schema import table_admin as admin
from socorro_store.schema.specs import FOREVER, FamilySpec, TableSpec

bigtable_data = pytest.importorskip("google.cloud.bigtable.data",
                                    reason="bigtable extra not installed (pip install 'socorro-store[bigtable]')")

SPEC = TableSpec("t", (
    FamilySpec("cf", versions=3),
    FamilySpec("one"),
    FamilySpec("ttl", versions=2, ttl=3600),
    FamilySpec("z", compression="LZO", blocksize=8192, in_memory=True, blockcache=False),
))


@pytest.fixture
def bt_url(bigtable_emulator_url, tmp_path):
    return isolated_url("bigtable-emulator", bigtable_emulator_url, tmp_path)


@pytest.fixture
def bt(bt_url):
    with open_backend(bt_url) as backend:
        backend.create_table(SPEC)
        yield backend


@pytest.fixture
def raw(bt):
    """An independent data client on the same emulator: the table as Bigtable stores it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        client = bigtable_data.BigtableDataClient(project=bt.project)
    table = client.get_table(bt.instance_id, "t")
    yield table
    table.close()
    client.close()


def raw_cells(raw, row):
    rows = raw.read_rows(bigtable_data.ReadRowsQuery(row_keys=[row]))
    return [(c.family, c.qualifier, c.value, c.timestamp_micros) for r in rows for c in r.cells]


# -- admin: GC rules and attributes ------------------------------------------------------------

def test_spec_becomes_gc_rules(bt):
    from google.cloud.bigtable_admin_v2 import types as admin_types

    live = bt._admin_client().get_table(request={"name": f"projects/{bt.project}/instances/{bt.instance_id}/tables/t"})
    rules = {name: admin_types.GcRule.to_dict(family.gc_rule) for name, family in live.column_families.items()}
    assert rules["cf"]["max_num_versions"] == 3
    assert rules["one"]["max_num_versions"] == 1
    union = rules["ttl"]["union"]["rules"]
    assert {"max_num_versions": 2} in [{k: v for k, v in r.items() if v} for r in union]
    assert any(r.get("max_age") for r in union)
    assert "union" not in rules["cf"]  # no TTL, no max-age rule


def test_describe_rebuilds_versions_and_ttl_and_defaults_the_rest(bt):
    described = bt.describe_table("t")
    assert described["cf"] == FamilySpec("cf", versions=3)
    assert described["ttl"] == FamilySpec("ttl", versions=2, ttl=3600)
    assert described["ttl"].ttl != FOREVER
    # Bigtable has no compression/block size/in-memory/block cache: the spec defaults come back
    assert described["z"] == FamilySpec("z")


def test_not_applicable_attributes_are_not_drift(bt):
    assert bt.not_applicable_attributes == ("COMPRESSION", "BLOCKSIZE", "IN_MEMORY", "BLOCKCACHE")
    assert admin.verify_tables(bt, {"t": SPEC}) == {}
    assert admin.describe_table(bt, "t")["not_applicable"] == list(bt.not_applicable_attributes)


def test_versions_and_ttl_drift_is_reported(bt):
    drifted = TableSpec("t", (FamilySpec("cf", versions=5), FamilySpec("one"),
                              FamilySpec("ttl", versions=2, ttl=60), FamilySpec("z")))
    diffs = admin.verify_tables(bt, {"t": drifted})["t"]
    assert any("cf: VERSIONS is 3" in d for d in diffs)
    assert any("ttl: TTL is 3600" in d for d in diffs)
    assert len(diffs) == 2


# -- timestamps: ms at the contract, us on the wire --------------------------------------------

def test_explicit_ms_timestamps_are_stored_as_micros(bt, raw):
    bt.mutate_rows("t", [RowMutation(b"r", {b"cf:q": b"v"})], timestamp=1_234_567)
    assert raw_cells(raw, b"r") == [("cf", b"q", b"v", 1_234_567_000)]
    assert bt.get_row("t", b"r", include_timestamp=True) == {b"cf:q": (b"v", 1_234_567)}


def test_micros_written_elsewhere_read_back_as_ms(bt, raw):
    raw.mutate_row(b"r", [bigtable_data.SetCell("cf", b"q", b"old", 5_000),
                          bigtable_data.SetCell("cf", b"q", b"new", 7_000)])
    assert bt.get_cells("t", b"r", b"cf:q") == [(b"new", 7), (b"old", 5)]
    # a read at timestamp T selects ts < T, in ms
    assert bt.get_row("t", b"r", timestamp=7) == {b"cf:q": b"old"}
    assert bt.get_row("t", b"r", timestamp=8) == {b"cf:q": b"new"}
    assert bt.get_row("t", b"r", timestamp=5) == {}
    assert bt.get_row("t", b"r", timestamp=0) == {}


def test_cells_of_one_call_share_one_timestamp(bt, raw):
    bt.mutate_rows("t", [RowMutation(b"a", {b"cf:q": b"1", b"one:q": b"2"}), RowMutation(b"b", {b"cf:q": b"3"})])
    stamps = {ts for row in (b"a", b"b") for *_cell, ts in raw_cells(raw, row)}
    assert len(stamps) == 1 and stamps.pop() % 1000 == 0


def test_timestamp_beyond_micros_range_is_refused_and_writes_nothing(bt, raw):
    too_big = (2**63 - 1) // 1000 + 1
    with pytest.raises(InvalidArgument):
        bt.mutate_rows("t", [RowMutation(b"r", {b"cf:q": b"v"})], timestamp=too_big)
    with pytest.raises(InvalidArgument):
        bt.get_row("t", b"r", timestamp=too_big)
    assert raw_cells(raw, b"r") == []


def test_delete_up_to_ms_boundary(bt):
    for ts in (10, 11, 12):
        bt.mutate_rows("t", [RowMutation(b"r", {b"cf:q": str(ts).encode()})], timestamp=ts)
    bt.mutate_rows("t", [RowMutation(b"r", deletes=[b"cf:q"])], timestamp=11)
    assert bt.get_cells("t", b"r", b"cf:q") == [(b"12", 12)]


# -- deletes: whole families when safe, per column when a newer cell must survive ----------------

def test_family_delete_spares_future_cells_per_column(bt, raw):
    bt.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"old", b"cf:b": b"old"})], timestamp=100)
    future = int(time.time() * 1000) + 3600 * 1000
    bt.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"future"})], timestamp=future)
    before = dict(bt.calls)
    bt.mutate_rows("t", [RowMutation(b"r", deletes=[b"cf"])])
    assert bt.calls["get_rows"] == before.get("get_rows", 0) + 1  # the one read of newest cells
    assert raw_cells(raw, b"r") == [("cf", b"a", b"future", future * 1000)]


def test_row_delete_without_newer_cells_is_one_mutation(bt, raw):
    bt.mutate_rows("t", [RowMutation(b"r", {b"cf:a": b"1", b"one:b": b"2", b"z:c": b"3"})])
    bt.mutate_rows("t", [RowMutation(b"r", delete_row=True)])
    assert raw_cells(raw, b"r") == []


# -- counters and validation before non-atomic writes --------------------------------------------

def test_increment_batch_with_a_bad_cell_writes_nothing(bt, raw):
    # The emulator applies the rules before a bad one, and rows are separate calls: the adapter
    # reads the cells first.
    bt.mutate_rows("t", [RowMutation(b"bad", {b"one:n": b"not8"})], timestamp=5)
    with pytest.raises(NotACounter):
        bt.increment_many([Increment("t", b"good", b"one:n", 1), Increment("t", b"bad", b"one:m", 1),
                           Increment("t", b"bad", b"one:n", 1)])
    assert raw_cells(raw, b"good") == []
    assert raw_cells(raw, b"bad") == [("one", b"n", b"not8", 5000)]


def test_increments_of_one_row_are_one_call(bt):
    before = bt.calls["increment_many"]
    bt.increment_many([Increment("t", b"r", b"one:a", 1), Increment("t", b"r", b"one:b", 2),
                       Increment("t", b"r", b"one:a", 3), Increment("t", b"s", b"one:a", 4)])
    assert bt.calls["increment_many"] == before + 2
    assert bt.get_row("t", b"r") == {b"one:a": struct.pack(">q", 4), b"one:b": struct.pack(">q", 2)}


def test_cell_over_the_emulator_channel_cap_reads_back(bt):
    big = bytes(range(256)) * (6 * 4096)  # 6 MiB: over gRPC's default 4 MiB receive limit
    bt.mutate_rows("t", [RowMutation(b"big", {b"z:q": big})])
    assert bt.get_row("t", b"big") == {b"z:q": big}


def test_row_key_over_bigtable_limit_is_refused(bt, raw):
    with pytest.raises(InvalidArgument):
        bt.mutate_rows("t", [RowMutation(b"k" * 4097, {b"cf:q": b"v"})])
    bt.mutate_rows("t", [RowMutation(b"k" * 4096, {b"cf:q": b"v"})])
    assert bt.get_row("t", b"k" * 4096) == {b"cf:q": b"v"}


# -- emulated reversed scans -------------------------------------------------------------------

def test_reverse_scan_reads_blocks_of_a_page(bt):
    keys = [bytes([i]) + b"k" for i in range(1, 51)]
    bt.mutate_rows("t", [RowMutation(k, {b"cf:q": k}) for k in keys])
    before = bt.calls["scan"]
    got = [row for row, _cells in bt.scan("t", reverse=True, page_size=10)]
    assert got == keys[::-1]
    # 6 key-only pages (the last one short) + 5 blocks, each read as one page plus its empty tail
    assert bt.calls["scan"] - before <= 6 + 5 * 2
    assert [row for row, _ in bt.scan("t", reverse=True, start=keys[30], stop=keys[4], page_size=7)] == \
        keys[5:31][::-1]
    assert [row for row, _ in bt.scan("t", reverse=True, limit=3, page_size=2)] == keys[:-4:-1]


# -- errors ------------------------------------------------------------------------------------

def test_stale_family_cache_error_is_family_not_found(bt, bt_url):
    with open_backend(bt_url) as other:
        other.drop_table("t")
        other.create_table(TableSpec("t", (FamilySpec("cf"),)))
    # bt still believes "one" exists: the emulator's error string becomes FamilyNotFound
    with pytest.raises(FamilyNotFound):
        bt.mutate_rows("t", [RowMutation(b"r", {b"one:q": b"v"})])
    with pytest.raises(FamilyNotFound):  # and the cache was refreshed
        bt.get_row("t", b"r", columns=[b"one"])


def test_dropped_elsewhere_is_table_not_found(bt, bt_url):
    bt.get_row("t", b"r")  # cache the families
    with open_backend(bt_url) as other:
        other.drop_table("t")
    with pytest.raises(TableNotFound):
        bt.get_row("t", b"r")


def test_unreachable_emulator_is_backend_unavailable(bt_url, monkeypatch):
    with socket.socket() as sock:  # a loopback port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", f"127.0.0.1:{port}")
    with open_backend(bt_url) as dead:
        dead.operation_timeout, dead.attempt_timeout = 1.0, 0.5
        with pytest.raises(BackendUnavailable):
            dead.list_tables()
        dead._families["t"] = {"one": FamilySpec("one")}  # skip the admin lookup
        with pytest.raises(BackendUnavailable):
            dead.get_row("t", b"r")
        with pytest.raises(BackendUnavailable):
            dead.increment("t", b"r", b"one:n")
        assert dead.calls["increment"] == 1
