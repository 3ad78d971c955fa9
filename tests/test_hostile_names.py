"""Hostile names: stored and read back exactly, or refused with HBase's error; never SQL or paths.

Table names, family names, qualifiers and row keys with quotes, NUL bytes, ``../``, SQL fragments,
unicode and 32 KB keys, at the engine level (the embedded backend) and through the gateway with
happybase.  Afterwards the store directory holds only the engine's own generated file names.
"""

import os
import sys
import uuid

import happybase
import pytest
from thriftpy2.thrift import TApplicationException

from socorro_store.backends import RowMutation, open_backend
from socorro_store.engine import Engine
from socorro_store.errors import InvalidArgument
from socorro_store.schema.specs import FamilySpec, TableSpec

Hbase_thrift = sys.modules["Hbase_thrift"]  # the IDL module happybase loads on import
SQL = "x'); DELETE FROM cells; DROP TABLE markers; --"
TABLES = [SQL, "../../outside", "/tmp/abs", 'dq"uote', "nul\x00byte", "ünï", "tables", "catalog.sqlite",
          "a" * 1000, "%s%n", "ns:tbl"]
FAMILIES = ["f", "g'; DROP TABLE cells; --", "h\x00\"x", "../fam", "ü", ".dot"]
QUALIFIERS = [b"", b"\x00", b"'", b'"', b"../../q", SQL.encode(), b"\xff\xfe", b"q" * 4096, b"a:b:c"]
ROWS = [b"\x00", b"'", b"../x", SQL.encode(), b"\xff" * 10, b"k" * 32767, b"\x00" * 100]
ILLEGAL_FAMILIES = ["", "a:b"]


def _only_engine_files(root, store):
    assert sorted(os.listdir(root)) == ["store"], os.listdir(root)
    assert {n for n in os.listdir(store) if not n.endswith(("-wal", "-shm"))} == {"catalog.sqlite", "tables"}
    for name in os.listdir(os.path.join(store, "tables")):
        base = name.split("-")[0]
        assert base.startswith("t") and base[1:-7].isdigit() and base.endswith(".sqlite"), name


def test_hostile_names_round_trip_at_the_engine_level(tmp_path):
    store = tmp_path / "store"
    with open_backend(f"embedded://{store}") as backend:
        for t, table in enumerate(TABLES):
            backend.create_table(TableSpec(table, tuple(FamilySpec(f) for f in FAMILIES)))
            mutations = [RowMutation(row, {f.encode() + b":" + q: b"%d|%d|%d" % (t, r, i)
                                           for i, q in enumerate(QUALIFIERS) for f in FAMILIES})
                         for r, row in enumerate(ROWS)]
            backend.mutate_rows(table, mutations)
        assert backend.list_tables() == sorted(TABLES)
        for t, table in enumerate(TABLES):
            assert set(backend.describe_table(table)) == set(FAMILIES)
            for r, row in enumerate(ROWS):
                want = {f.encode() + b":" + q: b"%d|%d|%d" % (t, r, i)
                        for i, q in enumerate(QUALIFIERS) for f in FAMILIES}
                assert backend.get_row(table, row) == want
            assert [row for row, _ in backend.scan(table)] == sorted(ROWS)
            assert [row for row, _ in backend.scan(table, prefix=b"\x00")] == [b"\x00", b"\x00" * 100]
        # a 32 KB key (one byte over HBase's 32767) is refused with HBase's message, nothing written
        with pytest.raises(InvalidArgument, match="Row length 32768"):
            backend.mutate_rows(TABLES[0], [RowMutation(b"k" * 32768, {b"f:q": b"v"})])
        for family in ILLEGAL_FAMILIES:
            with pytest.raises(InvalidArgument):
                backend.create_table(TableSpec("t_" + uuid.uuid4().hex[:6], (FamilySpec(family),)))
        assert backend.list_tables() == sorted(TABLES)
        backend.drop_table("../../outside")
    _only_engine_files(tmp_path, str(store))
    engine = Engine(str(store))
    try:
        assert engine.integrity_check() == []
        assert "../../outside" not in engine.table_names()
    finally:
        engine.close()


# HBase's TableName takes Unicode letters and digits (Character.isLetterOrDigit), not symbols
LEGAL_FOR_HBASE = ["ok_table", "dots.and-dashes", "under_score9", "ünï", "١٢"]
ILLEGAL_FOR_HBASE = [SQL, "../../outside", "/tmp/abs", 'dq"uote', "nul\x00byte", "a☃", ".hidden", "-dash", ""]


@pytest.fixture(params=["gateway", "hbase-real"])
def thrift_server(request):
    """``(port, gateway or None)``: our gateway, or a real HBase's Thrift1 server to hold it to."""
    if request.param == "gateway":
        gateway = request.getfixturevalue("gateway_buffered_binary")
        return gateway.port, gateway
    url = request.getfixturevalue("hbase_real_url")
    return int(url.split("://", 1)[1].split("?")[0].rsplit(":", 1)[1]), None


def test_hostile_names_through_the_gateway(thrift_server):
    port, gateway = thrift_server
    conn = happybase.Connection("127.0.0.1", port, autoconnect=True)
    try:
        prefix = "h" + uuid.uuid4().hex[:8]
        for name in LEGAL_FOR_HBASE:
            conn.create_table(f"{prefix}_{name}", {"f": {}, "g'x\"": {}})
        for name in ILLEGAL_FOR_HBASE:
            # HBase's TableName.valueOf throws outside the handler's try: an internal error
            with pytest.raises((TApplicationException, Hbase_thrift.IllegalArgument)) as info:
                conn.create_table(name, {"f": {}})
            assert "Illegal" in repr(info.value) or "createTable" in repr(info.value), info.value
        with pytest.raises(Hbase_thrift.IOError, match="NamespaceNotFoundException"):
            conn.create_table(f"nosuchns{prefix}:t", {"f": {}})
        # the default namespace is the plain name: "default:T" is T, everywhere
        conn.create_table(f"default:{prefix}_ns", {"f": {}})
        conn.table(f"default:{prefix}_ns").put(b"r", {b"f:q": b"v"})
        assert conn.table(f"{prefix}_ns").row(b"r") == {b"f:q": b"v"}
        conn.delete_table(f"{prefix}_ns", disable=True)
        tables = [t.decode() for t in conn.tables()]
        assert not set(ILLEGAL_FOR_HBASE) & set(tables)
        assert not [t for t in tables if t.startswith(("nosuchns", "default:"))]
        table = conn.table(f"{prefix}_{LEGAL_FOR_HBASE[0]}")
        for row in ROWS:
            table.put(row, {b"f:" + q: row[:10] + q[:10] for q in QUALIFIERS} | {b"g'x\":" + SQL.encode(): b"v"})
        for row in ROWS:
            want = {b"f:" + q: row[:10] + q[:10] for q in QUALIFIERS} | {b"g'x\":" + SQL.encode(): b"v"}
            assert table.row(row) == want
        assert [row for row, _ in table.scan()] == sorted(ROWS)
        # happybase's put is a mutateRows, where HBase's Put constructor throws outside the try
        with pytest.raises(TApplicationException):
            table.put(b"k" * 32768, {b"f:q": b"v"})
        with pytest.raises(Hbase_thrift.IllegalArgument) as info:  # mutateRow catches it
            conn.client.mutateRow(table.name, b"k" * 32768, [Hbase_thrift.Mutation(column=b"f:q", value=b"v")], {})
        assert b"Row length 32768" in info.value.message
        assert [row for row, _ in table.scan()] == sorted(ROWS)  # the refused put wrote nothing
    finally:
        for name in LEGAL_FOR_HBASE:
            conn.delete_table(f"{prefix}_{name}", disable=True)
        conn.close()
    if gateway is None:
        return
    store = gateway.directory
    assert {n for n in os.listdir(store) if not n.endswith(("-wal", "-shm"))} == {"catalog.sqlite", "tables"}
    for name in os.listdir(os.path.join(store, "tables")):
        assert name.split("-")[0].startswith("t") and name.split("-")[0].endswith(".sqlite"), name
