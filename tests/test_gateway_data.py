"""Gateway, happybase level: versions, timestamps, deletes, counters and the atomic calls."""

import struct
import time

import pytest
from gateway_helpers import Hbase_thrift, conn, gateway, table  # noqa: F401 - fixtures
from thriftpy2.thrift import TApplicationException


def test_versions_and_read_timestamps_select_strictly_older(table):
    for ts in (10, 20, 30, 40):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    # VERSIONS=3 keeps the three newest
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"v40", 40), (b"v30", 30), (b"v20", 20)]
    assert table.cells(b"r", b"cf:a", versions=2) == [b"v40", b"v30"]
    # read timestamps select [0, ts): ts itself is excluded
    assert table.row(b"r", timestamp=40, include_timestamp=True) == {b"cf:a": (b"v30", 30)}
    assert table.cells(b"r", b"cf:a", timestamp=31) == [b"v30", b"v20"]
    assert table.row(b"r", timestamp=20) == {}
    assert table.rows([b"r", b"missing", b"r"], timestamp=35) == [(b"r", {b"cf:a": b"v30"}), (b"r", {b"cf:a": b"v30"})]


def test_family_versus_empty_qualifier(table):
    table.put(b"r", {b"cf:": b"empty", b"cf:q": b"q", b"other:x": b"x"})
    assert table.row(b"r", columns=[b"cf"]) == {b"cf:": b"empty", b"cf:q": b"q"}
    assert table.row(b"r", columns=[b"cf:"]) == {b"cf:": b"empty"}
    assert table.row(b"r", columns=[b"cf:q", b"other"]) == {b"cf:q": b"q", b"other:x": b"x"}
    table.put(b"r", {b"cf:a:b": b"colon"})
    assert table.row(b"r", columns=[b"cf:a:b"]) == {b"cf:a:b": b"colon"}


def test_delete_timestamps_are_inclusive_and_mask_later_puts(table):
    for ts in (10, 20, 30):
        table.put(b"r", {b"cf:a": b"v%d" % ts, b"cf:b": b"b"}, timestamp=ts)
    table.delete(b"r", columns=[b"cf:a"], timestamp=20)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"v30", 30)]
    table.put(b"r", {b"cf:a": b"late"}, timestamp=15)  # masked by the delete marker at 20
    assert table.cells(b"r", b"cf:a") == [b"v30"]
    table.delete(b"r", columns=[b"cf"])  # bare family: the whole family, every version
    assert table.row(b"r") == {}
    table.put(b"r", {b"other:z": b"z"})
    table.delete(b"r")
    assert table.row(b"r") == {}


def test_batch_applies_puts_before_deletes(table):
    table.put(b"r", {b"cf:a": b"old"})
    with table.batch() as batch:
        batch.delete(b"r")
        batch.put(b"r", {b"cf:a": b"new"})
    assert table.row(b"r") == {}  # as on HBase: the delete (ts now) masks the put


def test_counters_are_8_byte_big_endian(table):
    assert table.counter_inc(b"r", b"cf:n") == 1
    assert table.counter_inc(b"r", b"cf:n", 10) == 11
    assert table.counter_dec(b"r", b"cf:n", 3) == 8
    assert table.row(b"r")[b"cf:n"] == struct.pack(">q", 8)
    table.counter_set(b"r", b"cf:m", -5)
    assert table.counter_get(b"r", b"cf:m") == -5
    table.put(b"r", {b"cf:text": b"abc"})
    with pytest.raises(Hbase_thrift.IOError) as err:
        table.counter_inc(b"r", b"cf:text")
    assert b"Field is not a long" in err.value.message
    assert table.row(b"r", columns=[b"cf:text"]) == {b"cf:text": b"abc"}


def test_counter_set_right_after_counter_inc_is_not_lost(table):
    """Issue 15: counter_set (a put at server time) in the millisecond of an increment replaces
    the counter, so the next counter_inc returns 1.  Hundreds of rounds make same-millisecond
    sequences certain; every round must give 1."""
    results = []
    for _ in range(300):
        table.counter_inc(b"r", b"cf:n")
        table.counter_inc(b"r", b"cf:n")
        table.counter_set(b"r", b"cf:n", 0)
        results.append(table.counter_inc(b"r", b"cf:n"))
    assert results == [1] * 300
    assert table.counter_get(b"r", b"cf:n") == 1


def test_counter_set_then_inc_at_one_explicit_millisecond(table):
    ts = int(time.time() * 1000) + 3600_000  # an hour ahead: every write below is in this millisecond
    table.put(b"r", {b"cf:n": struct.pack(">q", 41)}, timestamp=ts)
    assert table.counter_inc(b"r", b"cf:n") == 42
    table.put(b"r", {b"cf:n": struct.pack(">q", 0)}, timestamp=ts)  # counter_set at that ms
    assert table.counter_inc(b"r", b"cf:n") == 1
    assert table.cells(b"r", b"cf:n", include_timestamp=True) == [(struct.pack(">q", 1), ts)]


def test_increment_rows_check_and_put_append(conn, table):
    client, name = conn.client, conn._table_name("data")
    client.incrementRows([Hbase_thrift.TIncrement(table=name, row=b"r", column=b"cf:x", ammount=2),
                          Hbase_thrift.TIncrement(table=name, row=b"r", column=b"cf:x", ammount=3)])
    client.increment(Hbase_thrift.TIncrement(table=name, row=b"r", column=b"cf:y", ammount=7))
    assert table.counter_get(b"r", b"cf:x") == 5 and table.counter_get(b"r", b"cf:y") == 7
    put = Hbase_thrift.Mutation(column=b"cf:lock", value=b"me")
    assert client.checkAndPut(name, b"r", b"cf:lock", None, put, {}) is True
    assert client.checkAndPut(name, b"r", b"cf:lock", None, put, {}) is False
    other = Hbase_thrift.Mutation(column=b"cf:lock", value=b"you")
    assert client.checkAndPut(name, b"r", b"cf:lock", b"me", other, {}) is True
    assert table.row(b"r", columns=[b"cf:lock"]) == {b"cf:lock": b"you"}
    cells = client.append(Hbase_thrift.TAppend(table=name, row=b"r", columns=[b"cf:log"], values=[b"ab"]))
    cells = client.append(Hbase_thrift.TAppend(table=name, row=b"r", columns=[b"cf:log"], values=[b"cd"]))
    assert [c.value for c in cells] == [b"abcd"]
    cells = client.append(Hbase_thrift.TAppend(table=name, row=b"r", columns=[b"cf:z", b"cf:log", b"cf:a"],
                                                values=[b"1", b"2", b"3"]))
    assert [c.value for c in cells] == [b"3", b"abcd2", b"1"]  # HBase's Result order: by column
    with pytest.raises(TApplicationException) as err:  # bare family: HBase throws a NPE
        client.increment(Hbase_thrift.TIncrement(table=name, row=b"r", column=b"cf", ammount=1))
    assert err.value.type == TApplicationException.INTERNAL_ERROR
    assert table.counter_get(b"r", b"cf:x") == 5  # and the connection still works


def test_ttl_hides_expired_cells(conn):
    conn.create_table("ttl", {"cf": {"time_to_live": 1}})
    ttl = conn.table("ttl")
    ttl.put(b"r", {b"cf:old": b"x"}, timestamp=1000)  # 1970: long expired
    ttl.put(b"r", {b"cf:new": b"y"})
    assert ttl.row(b"r") == {b"cf:new": b"y"}
    assert conn.table("ttl").families()[b"cf"]["time_to_live"] == 1


def test_bad_input_writes_nothing(conn, table):
    with pytest.raises(TApplicationException):  # bare family in a put: uncaught on HBase
        table.put(b"r", {b"cf": b"x", b"cf:ok": b"y"})
    with pytest.raises(Hbase_thrift.IOError):  # unknown family
        table.put(b"r", {b"cf:ok": b"y", b"nope:q": b"z"})
    with pytest.raises(TApplicationException):  # empty row key
        table.put(b"", {b"cf:ok": b"y"})
    with pytest.raises(Hbase_thrift.IllegalArgument):
        conn.client.mutateRow(conn._table_name("data"), b"", [Hbase_thrift.Mutation(column=b"cf:a", value=b"1")], {})
    assert list(table.scan()) == []
