"""Gateway, happybase level: scans (ranges, prefixes, reverse, limits, batching) and filters."""

import pytest
from gateway_helpers import Hbase_thrift, conn, gateway, table  # noqa: F401 - fixtures
from thriftpy2.thrift import TApplicationException


@pytest.fixture
def filled(table):
    with table.batch() as batch:
        for key in (b"a1", b"a2", b"a3", b"b1", b"b2", b"c", b"\xff"):
            batch.put(key, {b"cf:x": key + b"-x", b"cf:y": b"y", b"other:z": b"z" + key})
    return table


def keys(results):
    return [row for row, _data in results]


def test_ranges_prefixes_and_reverse(filled):
    assert keys(filled.scan()) == [b"a1", b"a2", b"a3", b"b1", b"b2", b"c", b"\xff"]
    assert keys(filled.scan(row_start=b"a2", row_stop=b"b2")) == [b"a2", b"a3", b"b1"]
    assert keys(filled.scan(row_prefix=b"a")) == [b"a1", b"a2", b"a3"]
    assert keys(filled.scan(reverse=True)) == [b"\xff", b"c", b"b2", b"b1", b"a3", b"a2", b"a1"]
    # reversed: start inclusive, stop exclusive, start >= stop
    assert keys(filled.scan(row_start=b"b2", row_stop=b"a1", reverse=True)) == [b"b2", b"b1", b"a3", b"a2"]
    assert keys(filled.scan(row_prefix=b"a", reverse=True)) == [b"a3", b"a2", b"a1"]
    assert keys(filled.scan(limit=2)) == [b"a1", b"a2"]
    assert keys(filled.scan(limit=3, batch_size=1)) == [b"a1", b"a2", b"a3"]
    assert keys(filled.scan(row_start=b"c", row_stop=b"a")) == []


def test_columns_sorted_columns_and_batching(filled):
    assert list(filled.scan(row_prefix=b"a1", columns=[b"cf:y", b"other"])) == [
        (b"a1", {b"cf:y": b"y", b"other:z": b"za1"})]
    row, data = next(iter(filled.scan(row_prefix=b"b1", sorted_columns=True)))
    assert list(data) == [b"cf:x", b"cf:y", b"other:z"]
    parts = list(filled.scan(row_prefix=b"a1", scan_batching=2))
    assert [(r, sorted(d)) for r, d in parts] == [(b"a1", [b"cf:x", b"cf:y"]), (b"a1", [b"other:z"])]
    assert sum(1 for _ in filled.scan(batch_size=1)) == 7


def test_scan_with_timestamp_and_include_timestamp(table):
    table.put(b"r", {b"cf:a": b"old"}, timestamp=5)
    table.put(b"r", {b"cf:a": b"new"}, timestamp=9)
    assert list(table.scan(timestamp=9, include_timestamp=True)) == [(b"r", {b"cf:a": (b"old", 5)})]


@pytest.mark.parametrize("filter_string, expected", [
    ("PrefixFilter('b')", [b"b1", b"b2"]),
    ("RowFilter(>=, 'binary:b2')", [b"b2", b"c", b"\xff"]),
    ("RowFilter(=, 'regexstring:^a[13]$')", [b"a1", b"a3"]),
    ("RowFilter(=, 'substring:B')", [b"b1", b"b2"]),
    ("RowFilter(=, 'binaryprefix:a')", [b"a1", b"a2", b"a3"]),
    ("InclusiveStopFilter('a3')", [b"a1", b"a2", b"a3"]),
    ("PageFilter(2)", [b"a1", b"a2"]),
    ("ValueFilter(=, 'binary:zc')", [b"c"]),
    ("SingleColumnValueFilter('cf', 'x', =, 'binary:b1-x')", [b"b1"]),
    ("PrefixFilter('a') AND ValueFilter(=, 'binary:za2')", [b"a2"]),
    ("PrefixFilter('c') OR RowFilter(=, 'binary:a1')", [b"a1", b"c"]),
    ("(PrefixFilter('a') OR PrefixFilter('b')) AND PageFilter(4)", [b"a1", b"a2", b"a3", b"b1"]),
    ("WHILE RowFilter(<, 'binary:b')", [b"a1", b"a2", b"a3"]),
    ("SKIP ValueFilter(!=, 'binary:zb2')", [b"a1", b"a2", b"a3", b"b1", b"c", b"\xff"]),
])
def test_row_filters(filled, filter_string, expected):
    assert keys(filled.scan(filter=filter_string)) == expected
    assert keys(filled.scan(filter=filter_string.encode())) == expected


def test_cell_filters(filled):
    def first(flt, **kw):
        return next(iter(filled.scan(row_prefix=b"a1", filter=flt, **kw)))[1]

    assert first("KeyOnlyFilter()") == {b"cf:x": b"", b"cf:y": b"", b"other:z": b""}
    assert first("FirstKeyOnlyFilter()") == {b"cf:x": b"a1-x"}
    assert first("ColumnPrefixFilter('y')") == {b"cf:y": b"y"}
    assert first("MultipleColumnPrefixFilter('x', 'z')") == {b"cf:x": b"a1-x", b"other:z": b"za1"}
    assert first("FamilyFilter(=, 'binary:other')") == {b"other:z": b"za1"}
    assert first("QualifierFilter(>=, 'binary:y')") == {b"cf:y": b"y", b"other:z": b"za1"}
    assert first("ColumnRangeFilter('x', false, 'z', true)") == {b"cf:y": b"y", b"other:z": b"za1"}
    assert first("ValueFilter(=, 'substring:A1')") == {b"cf:x": b"a1-x", b"other:z": b"za1"}


def test_single_column_value_filter_missing_and_versions(table):
    table.put(b"has", {b"cf:s": b"old", b"cf:o": b"1"}, timestamp=1)
    table.put(b"has", {b"cf:s": b"new"}, timestamp=2)
    table.put(b"lacks", {b"cf:o": b"1"})
    scvf = "SingleColumnValueFilter('cf', 's', =, 'binary:old'{})"
    assert keys(table.scan(filter=scvf.format(""))) == [b"lacks"]  # latest version only; missing passes
    assert keys(table.scan(filter=scvf.format(", true, true"))) == []
    # latestVersionOnly=false: the version after the included one is still offered to the
    # filter (HBase counts versions again after filtering), so the older "old" matches
    assert keys(table.scan(filter=scvf.format(", false, false"))) == [b"has", b"lacks"]
    # TimestampsFilter surfaces an older version, as on HBase
    assert list(table.scan(filter="TimestampsFilter(1)")) == [(b"has", {b"cf:o": b"1", b"cf:s": b"old"})]


@pytest.mark.parametrize("bad", ["NoSuchFilter()", "PrefixFilter('a'", "PrefixFilter(a)",
                                 "PrefixFilter('a') AND", "RowFilter(<, 'regexstring:a')",
                                 "RowFilter(=, 'nosuch:a')", "KeyOnlyFilter() PrefixFilter('a')"])
def test_bad_filter_string_is_internal_error_and_connection_survives(filled, bad):
    with pytest.raises(TApplicationException) as err:
        list(filled.scan(filter=bad))
    assert err.value.type == TApplicationException.INTERNAL_ERROR
    assert err.value.message == b"Internal error processing scannerOpenWithScan"
    assert keys(filled.scan(limit=1)) == [b"a1"]


def test_scan_batching_with_row_filter_is_refused(filled):
    # HBase opens the scanner; its region server refuses the first fetch (IncompatibleFilterException)
    with pytest.raises(Hbase_thrift.IOError):
        list(filled.scan(filter="PageFilter(1)", scan_batching=1))


def test_scanner_ids_are_global_and_unknown_ids_rejected(conn, filled, gateway):
    from gateway_helpers import connect

    name = conn._table_name("data")
    first = conn.client.scannerOpenWithScan(name, Hbase_thrift.TScan(startRow=b""), {})
    other = connect(gateway)
    try:  # a scanner opened on one connection can be read from another
        rows = other.client.scannerGetList(first, 2)
        assert [r.row for r in rows] == [b"a1", b"a2"]
        second = other.client.scannerOpenWithScan(name, Hbase_thrift.TScan(startRow=b""), {})
        assert second != first
        other.client.scannerClose(first)
        other.client.scannerClose(second)
        with pytest.raises(Hbase_thrift.IllegalArgument) as err:
            conn.client.scannerGetList(first, 1)
        assert err.value.message == b"scanner ID is invalid"
        with pytest.raises(Hbase_thrift.IllegalArgument):
            conn.client.scannerClose(123456789)
        with pytest.raises(Hbase_thrift.IllegalArgument):
            conn.client.scannerGet(-1)
    finally:
        other.close()


def test_compat_scanner_calls(conn, filled):
    client, name = conn.client, conn._table_name("data")
    sid = client.scannerOpenWithStop(name, b"a2", b"b2", [b"cf:x"], {})
    rows = client.scannerGetList(sid, 10)
    client.scannerClose(sid)
    assert [(r.row, sorted(r.columns)) for r in rows] == [(b"a2", [b"cf:x"]), (b"a3", [b"cf:x"]), (b"b1", [b"cf:x"])]
    sid = client.scannerOpenWithPrefix(name, b"b", None, {})
    assert [r.row for r in client.scannerGetList(sid, 10)] == [b"b1", b"b2"]
    assert client.scannerGetList(sid, 10) == []
    client.scannerClose(sid)
